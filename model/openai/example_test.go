package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/openai"
)

// A provider on loopback that asks for the echo tool once, then answers.
// Any OpenAI-compatible server (Ollama at http://127.0.0.1:11434/v1, …)
// takes its place by its base URL.
func fakeProvider() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		_ = json.NewDecoder(r.Body).Decode(&req)
		last := req.Messages[len(req.Messages)-1]
		msg := `{"role":"assistant","tool_calls":[{"id":"call_1","type":"function",` +
			`"function":{"name":"echo","arguments":"{\"text\":\"hello\"}"}}]}`
		if last.Role == "tool" {
			msg = `{"role":"assistant","content":"The tool said: ` + last.Content + `"}`
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"1","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":`+msg+`}]}`)
	}))
}

func Example() {
	srv := fakeProvider()
	defer srv.Close()

	// In andon, HTTPClient is an egress client that puts the API key from
	// the vault on each request; APIKey stays empty.
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	m, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "gpt-4o-mini", HTTPClient: hc})
	if err != nil {
		fmt.Println(err)
		return
	}
	tools := []model.ToolSpec{{
		Name:        "echo",
		Description: "Echo the text back.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
	}}
	conv := []model.Message{{Role: model.RoleUser, Text: "Say hello through the echo tool."}}
	for {
		resp, err := m.Complete(context.Background(), &model.Request{Messages: conv, Tools: tools})
		if err != nil {
			fmt.Println(err)
			return
		}
		conv = append(conv, model.Message{Role: model.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) == 0 {
			fmt.Println("answer:", resp.Text)
			return
		}
		for _, c := range resp.ToolCalls {
			fmt.Println("call:", c.ID, c.Name, string(c.Arguments))
			var args struct{ Text string }
			_ = json.Unmarshal(c.Arguments, &args)
			conv = append(conv, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Text: args.Text})
		}
	}
	// Output:
	// call: call_1 echo {"text":"hello"}
	// answer: The tool said: hello
}

func ExampleAPIError() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"message":"The model 'gpt-nope' does not exist.","type":"invalid_request_error","code":"model_not_found"}}`)
	}))
	defer srv.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	m, _ := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "gpt-nope", HTTPClient: hc})
	_, err := m.Complete(context.Background(), &model.Request{Messages: []model.Message{{Role: model.RoleUser, Text: "hi"}}})
	fmt.Println(err)
	// Output:
	// openai: the provider answered 404 Not Found (invalid_request_error, model_not_found): The model 'gpt-nope' does not exist.
}
