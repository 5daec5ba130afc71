// Package openai is a [model.Model] that speaks the OpenAI chat-completions
// API, with tool calling: OpenAI itself, and the many servers that offer the
// same API (Ollama, vLLM, llama.cpp's server, LocalAI, LM Studio and others).
// [Config.BaseURL] says which.
//
// # Where the key comes from
//
// Inside andon the model's HTTP goes through egress: [Config.HTTPClient] is
// an egress client that vets the destination, puts the API key (a vault
// secret with placement bearer) on each request just before it leaves, and
// writes one audit row per request. Then [Config.APIKey] stays empty and
// this package never sees the key: it sends no Authorization header of its
// own. Set APIKey only with a plain HTTP client that adds no credential.
// The package never reads the environment (no OPENAI_API_KEY,
// OPENAI_BASE_URL or any other variable): what it does is what Config says.
//
// # Cancellation and time
//
// Complete runs under its ctx and has no timeout of its own: a cancelled ctx
// (a cancelled run) abandons the HTTP request at once, and egress records it
// as http_call_cancelled. Complete then returns an error matching
// [context.Canceled] (and the context's cause). Bound a call with a deadline
// on ctx. The audit row names the run that egress finds in ctx
// ([egress.WithRun]); this package does not set it, its caller does.
//
// # Retries
//
// None by default: one Complete is one request, so one audit row. Set
// [Config.MaxRetries] to retry on a connection error, 408, 409, 429 or 5xx
// (or whatever the provider's x-should-retry header says); each retry is a
// new request, audited on its own. The wait before a retry is what the
// provider's Retry-After-Ms or Retry-After asks for, up to a minute, or
// else half a second doubling up to 8 s, less up to a quarter at random;
// a cancelled ctx ends it.
//
// # The client
//
// The HTTP client is this package's own, a few hundred lines over
// net/http: the OpenAI Go library keeps chat completions in its root
// package with every other API (responses, realtime, audio, fine-tuning,
// …), and importing it cost more than half of a cold build of andon (see
// docs/build.md). Nothing is streamed: one request, one JSON answer.
//
// # Mapping
//
// Messages map one to one: system, user, assistant (its text and its tool
// calls, each with its id and JSON arguments) and tool (the result, with the
// tool_call_id it answers). Each [model.ToolSpec] becomes a function tool
// whose parameters are its input schema (an object schema with no properties
// when it has none). Only the first choice of the answer is read. A tool
// call's arguments are passed on as the JSON the model wrote, compacted;
// arguments that are not valid JSON (models do write those) are passed on
// as a JSON string holding the text, so that the tool refuses them with a
// message the model can act on, instead of the turn failing. A tool call
// without an id gets one: "call_<turn>_<index>", both counted from one. A
// refusal is read as the answer's text.
//
// # Errors
//
// An HTTP error from the provider is an [*APIError]: its status, the
// provider's error type and code, and its message — except for 401 and 403,
// whose message is left out because providers echo part of the key in it.
// A message that is kept has anything that looks like a key ("sk-…",
// "Bearer …", and Config.APIKey itself) replaced by "[redacted]". No error
// carries a header value. Other errors wrap what caused them.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/andonhq/andon/model"
)

// Config configures a [Model]. BaseURL and Model are required.
type Config struct {
	// BaseURL is the API's root, the part before "/chat/completions":
	// "https://api.openai.com/v1", "http://127.0.0.1:11434/v1" (Ollama),
	// "http://127.0.0.1:8000/v1" (vLLM), "http://127.0.0.1:8080/v1"
	// (llama.cpp). It may have no user info, query or fragment.
	BaseURL string

	// Model names the model, as the server knows it: "gpt-4o-mini",
	// "llama3.1:8b", …
	Model string

	// HTTPClient sends the requests. In andon it is an egress client that
	// injects the key; see the package documentation. Nil means a plain
	// [http.Client] with no timeout (ctx bounds each call).
	HTTPClient *http.Client

	// APIKey is sent as "Authorization: Bearer KEY". Leave it empty when
	// HTTPClient puts the credential on the request itself (egress does),
	// or when the server needs none (a local Ollama).
	APIKey string

	// MaxTokens caps the answer's length (the max_tokens field, which
	// every compatible server knows). Zero sends nothing: the server's
	// default.
	MaxTokens int64

	// MaxCompletionTokens caps the answer's length with the newer
	// max_completion_tokens field, which OpenAI's reasoning models require
	// instead of max_tokens. Zero sends nothing.
	MaxCompletionTokens int64

	// Temperature, if not nil, is sent as the sampling temperature.
	Temperature *float64

	// MaxRetries is how many times a failed request is retried. Zero means
	// never.
	MaxRetries int
}

// Model is a [model.Model] over the chat-completions API. It keeps no state
// between calls: one Model may serve any number of runs at once.
type Model struct {
	cfg      Config // its HTTPClient never nil
	endpoint string // BaseURL + "/chat/completions"
}

var _ model.Model = (*Model)(nil)

// New returns a model for cfg. It checks cfg and sends nothing.
func New(cfg Config) (*Model, error) {
	if cfg.Model == "" {
		return nil, errors.New("openai: Config.Model is required")
	}
	if cfg.BaseURL == "" {
		return nil, errors.New("openai: Config.BaseURL is required")
	}
	u, err := url.Parse(cfg.BaseURL)
	switch {
	case err != nil:
		return nil, errors.New("openai: Config.BaseURL is not a valid URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("openai: Config.BaseURL must be an http or https URL, not %q", u.Scheme)
	case u.Host == "":
		return nil, errors.New("openai: Config.BaseURL has no host")
	case u.User != nil || u.RawQuery != "" || u.Fragment != "":
		// A credential there would end up in errors; a query string would
		// be sent with every request.
		return nil, errors.New("openai: Config.BaseURL may have no user info, query or fragment")
	}
	if cfg.MaxTokens < 0 || cfg.MaxCompletionTokens < 0 || cfg.MaxRetries < 0 {
		return nil, errors.New("openai: Config.MaxTokens, MaxCompletionTokens and MaxRetries may not be negative")
	}
	m := &Model{cfg: cfg, endpoint: strings.TrimRight(cfg.BaseURL, "/") + "/chat/completions"}
	if m.cfg.HTTPClient == nil {
		m.cfg.HTTPClient = &http.Client{}
	}
	if cfg.Temperature != nil {
		t := *cfg.Temperature
		m.cfg.Temperature = &t
	}
	return m, nil
}

// Name returns the model's name, as sent to the server.
func (m *Model) Name() string { return m.cfg.Model }

// Complete sends the conversation and the tools on offer, and returns the
// model's turn. See the package documentation for the mapping, the errors
// and cancellation.
func (m *Model) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	if req == nil {
		req = &model.Request{}
	}
	body, err := m.params(req)
	if err != nil {
		return nil, err
	}
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("openai: encoding the request: %w", err)
	}
	c, err := m.send(ctx, b)
	if err != nil {
		if cerr := ctxErr(ctx); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	return response(c, turn(req))
}

// params maps a request onto the API's.
func (m *Model) params(req *model.Request) (*chatRequest, error) {
	p := &chatRequest{
		Model:               m.cfg.Model,
		MaxTokens:           m.cfg.MaxTokens,
		MaxCompletionTokens: m.cfg.MaxCompletionTokens,
		Temperature:         m.cfg.Temperature,
	}
	if len(req.Messages) == 0 {
		return p, errors.New("openai: the request has no messages")
	}
	for i, msg := range req.Messages {
		mp, err := message(msg)
		if err != nil {
			return p, fmt.Errorf("openai: message %d: %w", i+1, err)
		}
		p.Messages = append(p.Messages, mp)
	}
	for _, t := range req.Tools {
		fp, err := tool(t)
		if err != nil {
			return p, fmt.Errorf("openai: tool %q: %w", t.Name, err)
		}
		p.Tools = append(p.Tools, chatTool{Type: "function", Function: fp})
	}
	return p, nil
}

func message(msg model.Message) (chatMessage, error) {
	text := msg.Text
	switch msg.Role {
	case model.RoleSystem, model.RoleUser:
		return chatMessage{Role: string(msg.Role), Content: &text}, nil
	case model.RoleTool:
		if msg.ToolCallID == "" {
			return chatMessage{}, errors.New("a tool message needs the id of the call it answers (tool_call_id)")
		}
		return chatMessage{Role: "tool", Content: &text, ToolCallID: msg.ToolCallID}, nil
	case model.RoleAssistant:
		a := chatMessage{Role: "assistant"}
		// With tool calls and no text, content is left out (null), as the
		// API allows; a plain answer always has content.
		if msg.Text != "" || len(msg.ToolCalls) == 0 {
			a.Content = &text
		}
		for j, c := range msg.ToolCalls {
			if c.ID == "" || c.Name == "" {
				return chatMessage{}, fmt.Errorf("tool call %d has no id or no name", j+1)
			}
			args := "{}"
			if len(c.Arguments) > 0 {
				args = string(c.Arguments)
			}
			a.ToolCalls = append(a.ToolCalls, chatToolCall{
				ID:       c.ID,
				Type:     "function",
				Function: chatFunctionCall{Name: c.Name, Arguments: args},
			})
		}
		return a, nil
	default:
		return chatMessage{}, fmt.Errorf("unknown role %q", msg.Role)
	}
}

// emptyObjectSchema is the parameters of a tool with no input schema.
const emptyObjectSchema = `{"type":"object","properties":{}}`

func tool(t model.ToolSpec) (chatFunction, error) {
	if t.Name == "" {
		return chatFunction{}, errors.New("no name")
	}
	fp := chatFunction{Name: t.Name, Description: t.Description, Parameters: json.RawMessage(emptyObjectSchema)}
	if len(t.InputSchema) > 0 && string(t.InputSchema) != "null" {
		// The schema goes out as it came in (numbers included), compacted.
		var members map[string]json.RawMessage
		if err := json.Unmarshal(t.InputSchema, &members); err != nil || members == nil {
			return fp, errors.New("its input schema is not a JSON object")
		}
		var b bytes.Buffer
		if err := json.Compact(&b, t.InputSchema); err != nil {
			return fp, errors.New("its input schema is not a JSON object")
		}
		fp.Parameters = b.Bytes()
	}
	return fp, nil
}

// turn is the number of the turn being asked for: one more than the
// assistant messages so far.
func turn(req *model.Request) int {
	n := 1
	for _, msg := range req.Messages {
		if msg.Role == model.RoleAssistant {
			n++
		}
	}
	return n
}

// response maps the first choice of an answer onto a model turn.
func response(c *chatCompletion, turn int) (*model.Response, error) {
	if c == nil || len(c.Choices) == 0 {
		return nil, errors.New("openai: the answer has no choices")
	}
	ch := c.Choices[0]
	resp := &model.Response{Text: ch.Message.Content}
	if resp.Text == "" {
		resp.Text = ch.Message.Refusal
	}
	for j, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return nil, fmt.Errorf("openai: tool call %d is of type %q; only function tools are offered", j+1, tc.Type)
		}
		if tc.Function.Name == "" {
			return nil, fmt.Errorf("openai: tool call %d has no function name", j+1)
		}
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d_%d", turn, j+1)
		}
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{
			ID:        id,
			Name:      tc.Function.Name,
			Arguments: arguments(tc.Function.arguments()),
		})
	}
	if resp.Text == "" && len(resp.ToolCalls) == 0 {
		return nil, fmt.Errorf("openai: the answer is empty: no text and no tool calls (finish_reason %q)", ch.FinishReason)
	}
	return resp, nil
}

// arguments returns a tool call's arguments as valid JSON: compacted if
// they are JSON, {} if empty, and otherwise a JSON string of the text.
func arguments(s string) json.RawMessage {
	if len(bytes.TrimSpace([]byte(s))) == 0 {
		return json.RawMessage("{}")
	}
	var b bytes.Buffer
	if err := json.Compact(&b, []byte(s)); err == nil {
		return b.Bytes()
	}
	q, _ := json.Marshal(s)
	return q
}

// ctxErr wraps ctx's error, and its cause when that says more, or returns
// nil if ctx is not done.
func ctxErr(ctx context.Context) error {
	err := ctx.Err()
	if err == nil {
		return nil
	}
	if cause := context.Cause(ctx); cause != nil && cause != err {
		return fmt.Errorf("openai: model call: %w: %w", err, cause)
	}
	return fmt.Errorf("openai: model call: %w", err)
}
