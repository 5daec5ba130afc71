package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/openai"
)

func newModel(t *testing.T, cfg openai.Config) *openai.Model {
	t.Helper()
	if cfg.Model == "" {
		cfg.Model = "test-model"
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = client(t)
	}
	m, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// conversation has every kind of message: system, user, an assistant turn
// with text and two tool calls, their two results, and a plain assistant
// turn.
func conversation() *model.Request {
	return &model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Text: "You are terse."},
			{Role: model.RoleUser, Text: "Echo hi, then wait."},
			{Role: model.RoleAssistant, Text: "On it.", ToolCalls: []model.ToolCall{
				{ID: "call_a", Name: "mcp_demo_echo", Arguments: json.RawMessage(`{"text":"hi"}`)},
				{ID: "call_b", Name: "mcp_demo_slow"}, // no arguments: {}
			}},
			{Role: model.RoleTool, ToolCallID: "call_a", Text: "hi"},
			{Role: model.RoleTool, ToolCallID: "call_b", Text: "cancelled"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{
				{ID: "call_c", Name: "mcp_demo_echo", Arguments: json.RawMessage(`{"text":"again"}`)},
			}},
			{Role: model.RoleTool, ToolCallID: "call_c", Text: "again"},
		},
		Tools: []model.ToolSpec{
			{Name: "mcp_demo_echo", Description: "Echo the text.",
				InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","maxLength":1000000000000}},"required":["text"]}`)},
			{Name: "mcp_demo_slow"}, // no description, no schema
		},
	}
}

// asJSON round-trips v through JSON, for comparisons with what the server
// decoded.
func asJSON(t *testing.T, v string) any {
	t.Helper()
	var out any
	if err := json.Unmarshal([]byte(v), &out); err != nil {
		t.Fatalf("bad test JSON %s: %v", v, err)
	}
	return out
}

func TestRequest(t *testing.T) {
	t.Parallel()
	f := newFake(t, text("done"))
	temp := 0.0
	m := newModel(t, openai.Config{BaseURL: f.URL(), Model: "gpt-test", APIKey: "sk-direct-key-1", MaxTokens: 256, Temperature: &temp})
	if _, err := m.Complete(t.Context(), conversation()); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	reqs := f.got()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != "POST" || r.Path != "/v1/chat/completions" {
		t.Errorf("request = %s %s, want POST /v1/chat/completions", r.Method, r.Path)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer sk-direct-key-1" {
		t.Errorf("Authorization = %q", got)
	}
	want := map[string]any{
		"model":       "gpt-test",
		"max_tokens":  256.0,
		"temperature": 0.0,
		"messages": asJSON(t, `[
			{"role":"system","content":"You are terse."},
			{"role":"user","content":"Echo hi, then wait."},
			{"role":"assistant","content":"On it.","tool_calls":[
				{"id":"call_a","type":"function","function":{"name":"mcp_demo_echo","arguments":"{\"text\":\"hi\"}"}},
				{"id":"call_b","type":"function","function":{"name":"mcp_demo_slow","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call_a","content":"hi"},
			{"role":"tool","tool_call_id":"call_b","content":"cancelled"},
			{"role":"assistant","tool_calls":[
				{"id":"call_c","type":"function","function":{"name":"mcp_demo_echo","arguments":"{\"text\":\"again\"}"}}]},
			{"role":"tool","tool_call_id":"call_c","content":"again"}]`),
		"tools": asJSON(t, `[
			{"type":"function","function":{"name":"mcp_demo_echo","description":"Echo the text.",
				"parameters":{"type":"object","properties":{"text":{"type":"string","maxLength":1000000000000}},"required":["text"]}}},
			{"type":"function","function":{"name":"mcp_demo_slow","parameters":{"type":"object","properties":{}}}}]`),
	}
	if !reflect.DeepEqual(r.Body, want) {
		got, _ := json.MarshalIndent(r.Body, "", "  ")
		t.Errorf("request body:\n%s\nwant the same as %v", got, want)
	}
	if !strings.Contains(string(r.Raw), `"maxLength":1000000000000`) {
		t.Errorf("a schema's number was not sent as it came: %s", r.Raw)
	}
}

// Without an APIKey the model sends no Authorization header, whatever the
// environment says: the egress client puts the credential on.
func TestNoKeyNoAuthorization(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-the-environment")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/elsewhere")
	t.Setenv("OPENAI_ORG_ID", "org-env")
	f := newFake(t, text("done"))
	m := newModel(t, openai.Config{BaseURL: f.URL()})
	if _, err := m.Complete(t.Context(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "hi"}}}); err != nil {
		t.Fatalf("Complete: %v", err)
	}
	r := f.got()[0]
	if a, ok := r.Header["Authorization"]; ok {
		t.Errorf("Authorization sent: %q", a)
	}
	if o := r.Header.Get("OpenAI-Organization"); o != "" {
		t.Errorf("OpenAI-Organization from the environment sent: %q", o)
	}
	for _, k := range []string{"max_tokens", "max_completion_tokens", "temperature", "tools"} {
		if _, ok := r.Body[k]; ok {
			t.Errorf("%s sent though not configured", k)
		}
	}
}

func TestTextAnswer(t *testing.T) {
	t.Parallel()
	f := newFake(t, text("All done."))
	m := newModel(t, openai.Config{BaseURL: f.URL()})
	resp, err := m.Complete(t.Context(), conversation())
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if resp.Text != "All done." || len(resp.ToolCalls) != 0 {
		t.Errorf("resp = %+v", resp)
	}
}

func TestToolCallAnswer(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		reply(w, 200, completion(`{"role":"assistant","content":null,"tool_calls":[
			{"id":"call_x1","type":"function","function":{"name":"mcp_demo_echo","arguments":"{ \"text\" : \"hi\", \"n\": 18446744073709551615 }"}},
			{"type":"function","function":{"name":"mcp_demo_slow","arguments":""}},
			{"id":"call_x3","function":{"name":"mcp_demo_echo","arguments":"{\"text\": \"unterminated"}}]}`, "tool_calls"))
	})
	m := newModel(t, openai.Config{BaseURL: f.URL()})
	req := conversation() // two assistant turns so far: this is turn 3
	resp, err := m.Complete(t.Context(), req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	want := []model.ToolCall{
		{ID: "call_x1", Name: "mcp_demo_echo", Arguments: json.RawMessage(`{"text":"hi","n":18446744073709551615}`)},
		{ID: "call_3_2", Name: "mcp_demo_slow", Arguments: json.RawMessage(`{}`)},
		{ID: "call_x3", Name: "mcp_demo_echo", Arguments: json.RawMessage(`"{\"text\": \"unterminated"`)},
	}
	if resp.Text != "" || !reflect.DeepEqual(resp.ToolCalls, want) {
		t.Errorf("resp = %+v\nwant tool calls %+v", resp, want)
	}
	// The runtime records tool calls as JSON: they must marshal.
	if _, err := json.Marshal(resp.ToolCalls); err != nil {
		t.Errorf("tool calls do not marshal: %v", err)
	}
}

func TestRefusalIsText(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		reply(w, 200, completion(`{"role":"assistant","content":null,"refusal":"I can't help with that."}`, "stop"))
	})
	resp, err := newModel(t, openai.Config{BaseURL: f.URL()}).Complete(t.Context(), conversation())
	if err != nil || resp.Text != "I can't help with that." {
		t.Errorf("Complete = %+v, %v", resp, err)
	}
}

func TestBadAnswers(t *testing.T) {
	t.Parallel()
	cases := map[string]struct{ body, want string }{
		"no choices":  {`{"id":"x","object":"chat.completion","choices":[]}`, "no choices"},
		"empty":       {completion(`{"role":"assistant","content":""}`, "length"), `the answer is empty: no text and no tool calls (finish_reason "length")`},
		"custom tool": {completion(`{"role":"assistant","tool_calls":[{"id":"c","type":"custom","custom":{"name":"x","input":"y"}}]}`, "tool_calls"), `of type "custom"`},
		"not JSON":    {`{"choices": [`, "openai: model call:"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) { reply(w, 200, c.body) })
			_, err := newModel(t, openai.Config{BaseURL: f.URL()}).Complete(t.Context(), conversation())
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want it to say %q", err, c.want)
			}
		})
	}
}

// A request the model cannot map fails before anything is sent.
func TestBadRequests(t *testing.T) {
	t.Parallel()
	f := newFake(t, text("never"))
	m := newModel(t, openai.Config{BaseURL: f.URL()})
	user := model.Message{Role: model.RoleUser, Text: "hi"}
	cases := map[string]struct {
		req  *model.Request
		want string
	}{
		"nil":             {nil, "no messages"},
		"no messages":     {&model.Request{}, "no messages"},
		"unknown role":    {&model.Request{Messages: []model.Message{{Role: "robot"}}}, `message 1: unknown role "robot"`},
		"tool without id": {&model.Request{Messages: []model.Message{user, {Role: model.RoleTool, Text: "x"}}}, "message 2: a tool message needs"},
		"call without id": {&model.Request{Messages: []model.Message{user, {Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{Name: "x"}}}}}, "message 2: tool call 1 has no id"},
		"bad schema":      {&model.Request{Messages: []model.Message{user}, Tools: []model.ToolSpec{{Name: "t", InputSchema: json.RawMessage(`[1]`)}}}, `tool "t": its input schema is not a JSON object`},
		"tool no name":    {&model.Request{Messages: []model.Message{user}, Tools: []model.ToolSpec{{}}}, `tool "": no name`},
	}
	for name, c := range cases {
		if _, err := m.Complete(t.Context(), c.req); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to say %q", name, err, c.want)
		}
	}
	if n := len(f.got()); n != 0 {
		t.Errorf("%d requests sent for bad requests", n)
	}
}

func TestConfig(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		cfg  openai.Config
		want string
	}{
		"no model":    {openai.Config{BaseURL: "http://127.0.0.1:1/v1"}, "Model is required"},
		"no base":     {openai.Config{Model: "m"}, "BaseURL is required"},
		"scheme":      {openai.Config{Model: "m", BaseURL: "ftp://h/v1"}, "http or https"},
		"no host":     {openai.Config{Model: "m", BaseURL: "http:///v1"}, "no host"},
		"userinfo":    {openai.Config{Model: "m", BaseURL: "https://user:pass@h/v1"}, "no user info"},
		"query":       {openai.Config{Model: "m", BaseURL: "https://h/v1?key=sk-x"}, "no user info, query"},
		"negative":    {openai.Config{Model: "m", BaseURL: "https://h/v1", MaxRetries: -1}, "negative"},
		"unparseable": {openai.Config{Model: "m", BaseURL: "http://[::1"}, "not a valid URL"},
	}
	for name, c := range cases {
		_, err := openai.New(c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to say %q", name, err, c.want)
		}
		if err != nil && (strings.Contains(err.Error(), "pass") || strings.Contains(err.Error(), "sk-x")) {
			t.Errorf("%s: err = %v shows the URL's secret", name, err)
		}
	}
	m, err := openai.New(openai.Config{Model: "llama3.1:8b", BaseURL: "http://127.0.0.1:11434/v1"})
	if err != nil || m.Name() != "llama3.1:8b" {
		t.Errorf("New = %v, %v", m, err)
	}
}

const distinctiveKey = "sk-andon-DISTINCTIVE-7f3a9c1e5b"

// errorAnswer answers with status and an error object whose message, for
// the worst providers, echoes the key.
func errorAnswer(status int, typ, code, msg string) func(w http.ResponseWriter, r *http.Request, n int) {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		m := strings.ReplaceAll(msg, "AUTH", r.Header.Get("Authorization"))
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": m, "type": typ, "code": code, "param": nil}})
		reply(w, status, string(b))
	}
}

func TestHTTPErrors(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		answer func(w http.ResponseWriter, r *http.Request, n int)
		status int
		want   []string // each in the error text
		absent []string // none in the error text
	}{
		"401": {errorAnswer(401, "invalid_request_error", "invalid_api_key", "Incorrect API key provided: AUTH. You can find your API key at …"),
			401, []string{"401 Unauthorized", "refused the credential", "invalid_api_key"}, []string{"Incorrect"}},
		"403": {errorAnswer(403, "", "", "key AUTH may not use this model"), 403, []string{"403 Forbidden"}, []string{"may not"}},
		"404": {errorAnswer(404, "invalid_request_error", "model_not_found", "The model `gpt-nope` does not exist or you do not have access to it."),
			404, []string{"404 Not Found", "model_not_found", "The model `gpt-nope` does not exist"}, nil},
		"400 echoing the key": {errorAnswer(400, "invalid_request_error", "", "bad request from AUTH (key sk-andon-DISTINCTIVE-7f3a9c1e5b)"),
			400, []string{"400 Bad Request", "bad request from [redacted] (key [redacted])"}, nil},
		"429": {errorAnswer(429, "requests", "rate_limit_exceeded", "Rate limit reached"), 429, []string{"429 Too Many Requests", "Rate limit reached"}, nil},
		"500": {errorAnswer(500, "server_error", "", "The server had an error"), 500, []string{"500 Internal Server Error", "The server had an error"}, nil},
		"502 HTML": {func(w http.ResponseWriter, r *http.Request, n int) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			fmt.Fprint(w, "<html>Bad gateway for "+r.Header.Get("Authorization")+"</html>")
		}, 502, []string{"502 Bad Gateway"}, []string{"html"}},
		"redirect": {func(w http.ResponseWriter, r *http.Request, n int) {
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusFound)
		}, 302, []string{"302 Found"}, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := newFake(t, c.answer)
			hc := client(t)
			hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse } // as egress
			m := newModel(t, openai.Config{BaseURL: f.URL(), APIKey: distinctiveKey, HTTPClient: hc})
			_, err := m.Complete(t.Context(), conversation())
			var ae *openai.APIError
			if !errors.As(err, &ae) || ae.StatusCode != c.status {
				t.Fatalf("err = %v (%T), want an *APIError with status %d", err, err, c.status)
			}
			for _, s := range c.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %q, want it to say %q", err, s)
				}
			}
			for _, s := range c.absent {
				if strings.Contains(err.Error(), s) {
					t.Errorf("err = %q, want it not to say %q", err, s)
				}
			}
			for _, form := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
				if strings.Contains(form, "DISTINCTIVE") || strings.Contains(form, "Bearer") {
					t.Errorf("the key is in the error: %s", form)
				}
			}
			if n := len(f.got()); n != 1 {
				t.Errorf("%d requests, want 1: no retries by default", n)
			}
		})
	}
}

func TestRetries(t *testing.T) {
	t.Parallel()
	f := newFake(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After-Ms", "1")
			errorAnswer(503, "server_error", "", "busy")(w, r, n)
			return
		}
		text("after a retry")(w, r, n)
	})
	m := newModel(t, openai.Config{BaseURL: f.URL(), MaxRetries: 1})
	resp, err := m.Complete(t.Context(), conversation())
	if err != nil || resp.Text != "after a retry" {
		t.Fatalf("Complete = %+v, %v", resp, err)
	}
	if n := len(f.got()); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

var errStop = errors.New("operator pulled the cord")

// A cancelled ctx abandons the request in flight: Complete returns at
// once, with an error that matches context.Canceled and the cause.
func TestCancelInFlight(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil) // never answers
	m := newModel(t, openai.Config{BaseURL: f.URL()})
	completeCancelled(t, m, f.started, "Complete did not return after its ctx was cancelled")
}

// completeCancelled runs m.Complete, cancels it with errStop once stop is
// closed, and checks that it returns, with the cancel and its cause;
// late is the failure if it does not.
func completeCancelled(t *testing.T, m *openai.Model, stop <-chan struct{}, late string) {
	t.Helper()
	ctx, cancel := context.WithCancelCause(t.Context())
	go func() {
		<-stop
		cancel(errStop)
	}()
	done := make(chan error, 1)
	go func() {
		_, err := m.Complete(ctx, conversation())
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal(late)
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errStop) {
		t.Errorf("err = %v, want context.Canceled and the cause", err)
	}
}

func TestCancelledBeforeSend(t *testing.T) {
	t.Parallel()
	f := newFake(t, text("never"))
	m := newModel(t, openai.Config{BaseURL: f.URL()})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := m.Complete(ctx, conversation()); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n := len(f.got()); n != 0 {
		t.Errorf("%d requests sent on a cancelled ctx", n)
	}
}

func TestDeadline(t *testing.T) {
	t.Parallel()
	f := newFake(t, nil)
	m := newModel(t, openai.Config{BaseURL: f.URL()})
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := m.Complete(ctx, conversation()); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want context.DeadlineExceeded", err)
	}
}
