package main

import (
	"slices"
	"testing"
)

func TestSplitCommandLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{``, nil},
		{`   `, nil},
		{`prog`, []string{"prog"}},
		{`prog a b`, []string{"prog", "a", "b"}},
		{"  prog\ta \n b  ", []string{"prog", "a", "b"}},
		{`andon mcptest serve -record /tmp/r.jsonl`, []string{"andon", "mcptest", "serve", "-record", "/tmp/r.jsonl"}},
		{`'a b' c`, []string{"a b", "c"}},
		{`"a b" c`, []string{"a b", "c"}},
		{`a"b c"d`, []string{"ab cd"}},
		{`a'b'"c"d`, []string{"abcd"}},
		{`'' x ""`, []string{"", "x", ""}},
		{`'it'\''s'`, []string{"it's"}},
		{`'no \escapes $here "at all"'`, []string{`no \escapes $here "at all"`}},
		{`"say \"hi\" \\ \$HOME \x"`, []string{`say "hi" \ $HOME \x`}},
		{`a\ b`, []string{"a b"}},
		{`\'quoted\'`, []string{"'quoted'"}},
		{`\\`, []string{`\`}},
		{"a\\\nb", []string{"ab"}},
		{`$HOME ~ *.go | > x`, []string{"$HOME", "~", "*.go", "|", ">", "x"}},
		{`"¡unicode ok!" ümlaut`, []string{"¡unicode ok!", "ümlaut"}},
		{`'{"json":"args"}'`, []string{`{"json":"args"}`}},
	}
	for _, tt := range tests {
		got, err := splitCommandLine(tt.in)
		if err != nil {
			t.Errorf("splitCommandLine(%q): %v", tt.in, err)
			continue
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("splitCommandLine(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestSplitCommandLineErrors(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`'open`, `"open`, `a "b`, `trailing\`, `"escaped end\"`} {
		if got, err := splitCommandLine(in); err == nil {
			t.Errorf("splitCommandLine(%q) = %q, want an error", in, got)
		}
	}
}
