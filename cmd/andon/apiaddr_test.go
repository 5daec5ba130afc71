package main

import "testing"

// TestAPIBaseURL: the forms --api and ANDON_API take, and the base URL
// each one means.
func TestAPIBaseURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"127.0.0.1:7711":               "http://127.0.0.1:7711",
		"[::1]:7711":                   "http://[::1]:7711",
		"localhost:7700":               "http://localhost:7700",
		"http://127.0.0.1:7711":        "http://127.0.0.1:7711",
		"http://127.0.0.1:7711/":       "http://127.0.0.1:7711",
		"https://andon.example":        "https://andon.example",
		"https://andon.example/andon/": "https://andon.example/andon",
	} {
		got, err := apiBaseURL(in)
		if err != nil || got != want {
			t.Errorf("apiBaseURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "127.0.0.1", "http://", "http://:7700", "ftp://127.0.0.1:7700", "http://127.0.0.1:7700/?x=1", "http://127.0.0.1:7700/#top", "http://u:p@127.0.0.1:7700", "u@127.0.0.1:7700", "http://127.0.0.1:7700 x"} {
		if got, err := apiBaseURL(in); err == nil {
			t.Errorf("apiBaseURL(%q) = %q, want an error", in, got)
		}
	}
}
