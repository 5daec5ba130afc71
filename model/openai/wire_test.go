package openai_test

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/openai"
)

// The request is JSON, says so, and asks for JSON: servers that check
// (vLLM, LiteLLM) refuse a body without Content-Type.
func TestRequestHeaders(t *testing.T) {
	t.Parallel()
	f := newFake(t, text("done"))
	if _, err := newModel(t, openai.Config{BaseURL: f.URL() + "/"}).Complete(t.Context(), conversation()); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	r := f.got()[0]
	if r.Path != "/v1/chat/completions" {
		t.Errorf("path = %s: a trailing slash on BaseURL doubled", r.Path)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
	if a := r.Header.Get("Accept"); a != "application/json" {
		t.Errorf("Accept = %q", a)
	}
}

// Compatible servers answer errors in their own shapes: a string for the
// error (Ollama), a number for its code. The message is kept either way.
func TestErrorShapes(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ body, want string }{
		"string":      {`{"error":"model \"llama9\" not found, try pulling it first"}`, `404 Not Found: model "llama9" not found`},
		"number code": {`{"error":{"message":"no such model","type":"NotFoundError","code":404,"param":null}}`, "(NotFoundError, 404): no such model"},
		"no error":    {`{"detail":"Not Found"}`, "404 Not Found"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 404, c.body) })
			_, err := newModel(t, openai.Config{BaseURL: f.URL()}).Complete(t.Context(), conversation())
			var ae *openai.APIError
			if !errors.As(err, &ae) || ae.StatusCode != 404 || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want a 404 *APIError saying %q", err, c.want)
			}
		})
	}
}

// Some compatible servers send a tool call's arguments as the JSON object
// itself rather than a string of it: they are read the same.
func TestArgumentsAsObject(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		reply(w, 200, completion(`{"role":"assistant","tool_calls":[
			{"id":"c1","type":"function","function":{"name":"mcp_demo_echo","arguments":{"text": "hi"}}},
			{"id":"c2","type":"function","function":{"name":"mcp_demo_slow","arguments":null}}]}`, "tool_calls"))
	})
	resp, err := newModel(t, openai.Config{BaseURL: f.URL()}).Complete(t.Context(), conversation())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := []model.ToolCall{
		{ID: "c1", Name: "mcp_demo_echo", Arguments: json.RawMessage(`{"text":"hi"}`)},
		{ID: "c2", Name: "mcp_demo_slow", Arguments: json.RawMessage(`{}`)},
	}
	if !reflect.DeepEqual(resp.ToolCalls, want) {
		t.Errorf("tool calls = %+v, want %+v", resp.ToolCalls, want)
	}
}

// What is retried with MaxRetries set: a 5xx, 429, 408 and 409, and a
// connection that broke; not a 4xx that says the request is wrong, nor
// anything the provider marks x-should-retry: false. x-should-retry: true
// retries any status.
func TestWhatIsRetried(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		first    func(w http.ResponseWriter, r *http.Request)
		requests int
	}{
		"503":    {func(w http.ResponseWriter, r *http.Request) { reply(w, 503, `{}`) }, 2},
		"429":    {func(w http.ResponseWriter, r *http.Request) { reply(w, 429, `{}`) }, 2},
		"408":    {func(w http.ResponseWriter, r *http.Request) { reply(w, 408, `{}`) }, 2},
		"409":    {func(w http.ResponseWriter, r *http.Request) { reply(w, 409, `{}`) }, 2},
		"400":    {func(w http.ResponseWriter, r *http.Request) { reply(w, 400, `{}`) }, 1},
		"404":    {func(w http.ResponseWriter, r *http.Request) { reply(w, 404, `{}`) }, 1},
		"broken": {hangUp, 2},
		"no retry": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Should-Retry", "false")
			reply(w, 503, `{}`)
		}, 1},
		"retry 400": {func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Should-Retry", "true")
			reply(w, 400, `{}`)
		}, 2},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
				if n == 1 {
					w.Header().Set("Retry-After", "0")
					c.first(w, r)
					return
				}
				text("second")(w, r, n)
			})
			resp, err := newModel(t, openai.Config{BaseURL: f.URL(), MaxRetries: 3}).Complete(t.Context(), conversation())
			if got := len(f.got()); got != c.requests {
				t.Errorf("%d requests, want %d", got, c.requests)
			}
			if c.requests == 2 && (err != nil || resp.Text != "second") {
				t.Errorf("Complete = %+v, %v, want the retry's answer", resp, err)
			}
			if c.requests == 1 && err == nil {
				t.Errorf("Complete succeeded without a retry")
			}
			// Every attempt sent the same body.
			reqs := f.got()
			for _, r := range reqs[1:] {
				if string(r.Raw) != string(reqs[0].Raw) {
					t.Errorf("a retry sent another body:\n%s\nfirst:\n%s", r.Raw, reqs[0].Raw)
				}
			}
		})
	}
}

// hangUp closes the connection without an answer.
func hangUp(w http.ResponseWriter, r *http.Request) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err == nil {
		_ = conn.Close()
	}
}

// A cancel during the wait before a retry ends the wait: Complete returns
// with the cancel, and the retry is never sent.
func TestCancelWhileWaitingToRetry(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Retry-After", "59") // within the minute that is followed
		reply(w, 503, `{"error":{"message":"busy"}}`)
	})
	// The cancel comes once the model has closed the 503's body, which it
	// does before it waits.
	closed := make(chan struct{}, 10)
	hc := client(t)
	hc.Transport = closeSignal{hc.Transport, closed}
	m := newModel(t, openai.Config{BaseURL: f.URL(), MaxRetries: 1, HTTPClient: hc})
	completeCancelled(t, m, closed, "Complete waited out the Retry-After after its ctx was cancelled")
	if n := len(f.got()); n != 1 {
		t.Errorf("%d requests, want 1: the retry was sent after the cancel", n)
	}
}

// closeSignal is a transport whose responses' bodies signal on closed
// when they are closed.
type closeSignal struct {
	next   http.RoundTripper
	closed chan<- struct{}
}

func (c closeSignal) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		resp.Body = signalBody{resp.Body, c.closed}
	}
	return resp, err
}

type signalBody struct {
	io.ReadCloser
	closed chan<- struct{}
}

func (b signalBody) Close() error {
	err := b.ReadCloser.Close()
	b.closed <- struct{}{}
	return err
}
