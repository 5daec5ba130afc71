package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
)

// The chat-completions API's request and answer, as far as this package
// uses them. Fields it does not send are absent; fields of the answer it
// does not read are ignored.

// chatRequest is the body of POST /chat/completions.
type chatRequest struct {
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	Tools               []chatTool    `json:"tools,omitempty"`
	MaxTokens           int64         `json:"max_tokens,omitempty"`
	MaxCompletionTokens int64         `json:"max_completion_tokens,omitempty"`
	Temperature         *float64      `json:"temperature,omitempty"`
}

// chatMessage is one message of the conversation. Content is nil only for
// an assistant turn that has tool calls and no text.
type chatMessage struct {
	Role       string         `json:"role"`
	Content    *string        `json:"content,omitempty"`
	ToolCalls  []chatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// chatToolCall is a tool call of an assistant turn, sent back to the API.
type chatToolCall struct {
	ID       string           `json:"id"`
	Type     string           `json:"type"`
	Function chatFunctionCall `json:"function"`
}

// chatFunctionCall is the function of a tool call; Arguments is the JSON
// text the model wrote, as a string.
type chatFunctionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// chatTool is a tool on offer: always a function.
type chatTool struct {
	Type     string       `json:"type"`
	Function chatFunction `json:"function"`
}

// chatFunction is a function tool's definition; Parameters is a JSON
// Schema object, sent as it came.
type chatFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters"`
}

// chatCompletion is the answer, of which only the choices are read.
type chatCompletion struct {
	Choices []chatChoice `json:"choices"`
}

// chatChoice is one choice of an answer.
type chatChoice struct {
	FinishReason string `json:"finish_reason"`
	Message      struct {
		Content   string `json:"content"` // null reads as ""
		Refusal   string `json:"refusal"`
		ToolCalls []struct {
			ID       string         `json:"id"`
			Type     string         `json:"type"`
			Function answerFunction `json:"function"`
		} `json:"tool_calls"`
	} `json:"message"`
}

// answerFunction is the function of a tool call in an answer.
type answerFunction struct {
	Name string `json:"name"`
	// Arguments is a JSON string holding the arguments' JSON text, as the
	// API defines it; some compatible servers send the object itself.
	Arguments json.RawMessage `json:"arguments"`
}

// arguments returns the text of the call's arguments: the string's value,
// or the JSON as sent when it is not a string.
func (f answerFunction) arguments() string {
	var s string
	if err := json.Unmarshal(f.Arguments, &s); err == nil {
		return s
	}
	if string(f.Arguments) == "null" {
		return ""
	}
	return string(f.Arguments)
}

// errorBody is a provider's error answer: {"error": {...}}, or, from some
// compatible servers, {"error": "text"}.
type errorBody struct {
	Error json.RawMessage `json:"error"`
}

// errorObject is the error object of an error answer. Code and Param are
// strings at OpenAI; others send numbers, or null.
type errorObject struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
	Param   json.RawMessage `json:"param"`
}

// Limits on what is read of an answer.
const (
	maxAnswer    = 64 << 20 // a successful answer's body
	maxErrorBody = 64 << 10 // an error answer's body
)

// send POSTs body to the endpoint, retrying as Config.MaxRetries allows,
// and decodes the answer.
func (m *Model) send(ctx context.Context, body []byte) (*chatCompletion, error) {
	for attempt := 0; ; attempt++ {
		c, resp, err := m.attempt(ctx, body)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil || attempt >= m.cfg.MaxRetries || !retryable(resp, err) {
			return nil, err
		}
		t := time.NewTimer(retryDelay(resp, attempt))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, err
		case <-t.C:
		}
	}
}

// attempt makes one request. resp, with its body closed, is the answer's
// status and headers when there was one.
func (m *Model) attempt(ctx context.Context, body []byte) (*chatCompletion, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, m.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, nil, fmt.Errorf("openai: model call: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if m.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+m.cfg.APIKey)
	}
	resp, err := m.cfg.HTTPClient.Do(req)
	if err != nil {
		// *url.Error names the URL, which New made sure holds no secret.
		return nil, nil, fmt.Errorf("openai: model call: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return nil, resp, m.apiError(resp.StatusCode, b)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		return nil, resp, fmt.Errorf("openai: model call: reading the answer: %w", err)
	}
	if len(b) > maxAnswer {
		return nil, resp, fmt.Errorf("openai: model call: the answer is longer than %d bytes", maxAnswer)
	}
	var c chatCompletion
	if err := json.Unmarshal(b, &c); err != nil {
		return nil, resp, fmt.Errorf("openai: model call: the answer is not a chat completion: %w", err)
	}
	return &c, resp, nil
}

// apiError reads an error answer's body. A body that is not an error
// object (a proxy's page, a plain-text error) or a redirect, never
// followed, gives the status alone.
func (m *Model) apiError(status int, body []byte) error {
	e := &APIError{StatusCode: status}
	var eb errorBody
	if json.Unmarshal(body, &eb) != nil || len(eb.Error) == 0 {
		return e
	}
	var obj errorObject
	if err := json.Unmarshal(eb.Error, &obj); err != nil {
		if json.Unmarshal(eb.Error, &obj.Message) != nil {
			return e
		}
	}
	e.Type, e.Code, e.Param = m.redact(obj.Type), m.redact(scalar(obj.Code)), m.redact(scalar(obj.Param))
	if status != http.StatusUnauthorized && status != http.StatusForbidden {
		e.Message = m.redact(obj.Message)
	}
	return e
}

// scalar is a JSON string's value, or a number's text; "" for anything
// else.
func scalar(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// retryable says whether a failed attempt may be retried: a connection
// error, 408, 409, 429 or 5xx, unless the provider's x-should-retry header
// says otherwise.
func retryable(resp *http.Response, err error) bool {
	if resp == nil {
		return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
	}
	switch resp.Header.Get("X-Should-Retry") {
	case "true":
		return true
	case "false":
		return false
	}
	s := resp.StatusCode
	return s == http.StatusRequestTimeout || s == http.StatusConflict || s == http.StatusTooManyRequests || s >= 500
}

// Bounds of the wait before a retry.
const (
	maxRetryAfter = 60 * time.Second // the longest Retry-After followed
	maxBackoff    = 8 * time.Second
)

// retryDelay is the wait before retry number attempt+1: what the
// provider's Retry-After-Ms or Retry-After asks for, up to a minute, or
// else half a second doubling with each attempt, up to 8 s, less up to a
// quarter of it at random.
func retryDelay(resp *http.Response, attempt int) time.Duration {
	if resp != nil {
		if ms, err := strconv.ParseFloat(resp.Header.Get("Retry-After-Ms"), 64); err == nil && ms >= 0 {
			if d := time.Duration(ms * float64(time.Millisecond)); d <= maxRetryAfter {
				return d
			}
		}
		if ra := resp.Header.Get("Retry-After"); ra != "" {
			d := time.Duration(-1)
			if s, err := strconv.ParseFloat(ra, 64); err == nil {
				d = time.Duration(s * float64(time.Second))
			} else if t, err := http.ParseTime(ra); err == nil {
				d = time.Until(t)
			}
			if d >= 0 && d <= maxRetryAfter {
				return d
			}
		}
	}
	d := maxBackoff
	if attempt < 5 {
		d = min(maxBackoff, (500*time.Millisecond)<<attempt)
	}
	return d - time.Duration(rand.Int64N(int64(d/4)+1))
}
