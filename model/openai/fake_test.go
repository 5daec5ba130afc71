package openai_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// received is one request as the fake server saw it.
type received struct {
	Method, Path string
	Header       http.Header
	Body         map[string]any
	Raw          []byte
}

// fake is a local server that speaks the chat-completions API: it records
// every request and answers with answer (nil: never, see slow).
type fake struct {
	srv *httptest.Server
	// release unblocks handlers that wait (slow answers) when the test
	// ends, so that the server can close.
	release chan struct{}

	mu       sync.Mutex
	requests []received
	answer   func(w http.ResponseWriter, r *http.Request, n int)
	started  chan struct{} // one value per request received
}

func newFake(t *testing.T, answer func(w http.ResponseWriter, r *http.Request, n int)) *fake {
	t.Helper()
	f := &fake{release: make(chan struct{}), answer: answer, started: make(chan struct{}, 100)}
	if f.answer == nil {
		f.answer = f.slow
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve)) // 127.0.0.1
	t.Cleanup(func() {
		close(f.release)
		f.srv.Close()
	})
	return f
}

// URL is the base URL to give the model: the server's root plus /v1.
func (f *fake) URL() string { return f.srv.URL + "/v1" }

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	rec := received{Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone(), Raw: raw}
	_ = json.Unmarshal(raw, &rec.Body)
	f.mu.Lock()
	f.requests = append(f.requests, rec)
	n := len(f.requests)
	f.mu.Unlock()
	f.started <- struct{}{}
	f.answer(w, r, n)
}

func (f *fake) got() []received {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]received(nil), f.requests...)
}

// client is a plain HTTP client of the test's own, whose idle connections
// are closed when the test ends.
func client(t *testing.T) *http.Client {
	t.Helper()
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// reply writes a JSON answer.
func reply(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

// completion is a chat-completion answer whose single choice has message
// msg (a JSON object).
func completion(msg, finish string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"test-model",` +
		`"choices":[{"index":0,"finish_reason":"` + finish + `","message":` + msg + `}],` +
		`"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
}

// text answers with a final text.
func text(s string) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		b, _ := json.Marshal(s)
		reply(w, 200, completion(`{"role":"assistant","content":`+string(b)+`}`, "stop"))
	}
}

// slow answers only when the client goes away or the test ends: the
// answer of a fake made with a nil answer.
func (f *fake) slow(w http.ResponseWriter, r *http.Request, n int) {
	select {
	case <-r.Context().Done():
	case <-f.release:
	}
}
