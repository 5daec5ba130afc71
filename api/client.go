package api

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/andonhq/andon/agent"
)

// Client calls an andon server's API. The zero value is not usable; set
// BaseURL.
type Client struct {
	// BaseURL is the server, e.g. "http://127.0.0.1:7700".
	BaseURL string
	// HTTP makes the requests. Nil means http.DefaultClient.
	HTTP *http.Client
	// Token is the API token (andon_…) sent on every request as
	// Authorization: Bearer. Empty sends none: enough for Health, Ready
	// and a server without tokens.
	Token string
}

// MaxResponseBytes bounds a response the client reads: a larger one is an
// error that names it.
const MaxResponseBytes = 16 << 20

// Error is an error response from the API.
type Error struct {
	Status  int
	Code    string // bad_request, unauthenticated, forbidden, not_found, conflict, unavailable, internal
	Message string
}

// Error returns the API's message and its code, as "api: MESSAGE (CODE)".
func (e *Error) Error() string { return fmt.Sprintf("api: %s (%s)", e.Message, e.Code) }

// Health reports whether the server answers.
func (c *Client) Health(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/v1/health", nil, nil)
}

// Ready reports whether the server and its store answer.
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/v1/ready", nil, nil)
}

// AuditQuery selects the rows of [Client.ListAudit]. Its zero value asks
// for the newest page of every row.
type AuditQuery struct {
	RunID  string // the rows of this run only
	Action string // the rows of this action only
	Limit  int    // at most this many (1 to 1000); zero means the server's default, 100
	Before int64  // rows older than this seq: the NextBefore of the page before
}

// ListAudit returns a page of audit rows, newest first.
func (c *Client) ListAudit(ctx context.Context, aq AuditQuery) (*AuditPage, error) {
	q := url.Values{}
	if aq.RunID != "" {
		q.Set("run", aq.RunID)
	}
	if aq.Action != "" {
		q.Set("action", aq.Action)
	}
	if aq.Limit > 0 {
		q.Set("limit", fmt.Sprint(aq.Limit))
	}
	if aq.Before > 0 {
		q.Set("before", fmt.Sprint(aq.Before))
	}
	path := "/v1/audit"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var page AuditPage
	return &page, c.do(ctx, http.MethodGet, path, nil, &page)
}

// WhoAmI returns who the client's token acts as.
func (c *Client) WhoAmI(ctx context.Context) (*Identity, error) {
	var id Identity
	return &id, c.do(ctx, http.MethodGet, "/v1/whoami", nil, &id)
}

// CreateRun starts a run.
func (c *Client) CreateRun(ctx context.Context, req *agent.Request) (*Run, error) {
	var run Run
	return &run, c.do(ctx, http.MethodPost, "/v1/runs", req, &run)
}

// RunPage is a page of runs, newest first, as GET /v1/runs gives it: a
// run's request, and the arguments of the call it waits on, are left out
// when larger than a list shows (Run.RequestOmitted,
// PendingCall.ArgsOmitted). NextBefore, if set, is the Before of the next
// page.
type RunPage struct {
	Runs       []Run  `json:"runs"`
	NextBefore string `json:"next_before,omitempty"`
}

// ListRuns lists a page of runs, newest first: see [Client.ListRunsPage].
func (c *Client) ListRuns(ctx context.Context, f agent.RunFilter) ([]Run, error) {
	page, err := c.ListRunsPage(ctx, f)
	return page.Runs, err
}

// ListRunsPage lists a page of runs, newest first: at most f.Limit (1 to
// 1000; zero means the server's default, 100), older than f.Before.
func (c *Client) ListRunsPage(ctx context.Context, f agent.RunFilter) (*RunPage, error) {
	q := url.Values{}
	if f.Status != "" {
		q.Set("status", string(f.Status))
	}
	if f.Owner != "" {
		q.Set("owner", f.Owner)
	}
	if f.Before != "" {
		q.Set("before", f.Before)
	}
	if f.Limit > 0 {
		q.Set("limit", fmt.Sprint(f.Limit))
	}
	var page RunPage
	path := "/v1/runs"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	return &page, c.do(ctx, http.MethodGet, path, nil, &page)
}

// GetRun returns a run with its steps and audit rows.
func (c *Client) GetRun(ctx context.Context, id string) (*RunDetail, error) {
	var d RunDetail
	return &d, c.do(ctx, http.MethodGet, "/v1/runs/"+url.PathEscape(id), nil, &d)
}

// CancelResult is what a cancel returns.
type CancelResult struct {
	Run    Run     `json:"run"`
	TookMS float64 `json:"took_ms"`
	// Tasks says what the cancel did about the run's MCP tasks.
	Tasks []TaskCancel `json:"tasks"`
}

// CancelRun cancels a run.
func (c *Client) CancelRun(ctx context.Context, id string) (*CancelResult, error) {
	var res CancelResult
	return &res, c.do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+"/cancel", nil, &res)
}

// Decide approves (or, with approve false, denies) the call a run waits on.
func (c *Client) Decide(ctx context.Context, id string, approve bool) (*Run, error) {
	return c.DecideCall(ctx, id, approve, nil)
}

// DecideCall is Decide naming the call decided on (as the run's Pending
// shows it): the API decides only if the run waits on exactly that call,
// and answers conflict otherwise. A nil call decides on whatever the run
// waits on.
func (c *Client) DecideCall(ctx context.Context, id string, approve bool, call *CallRef) (*Run, error) {
	verb := "/approve"
	if !approve {
		verb = "/deny"
	}
	var res struct {
		Run Run `json:"run"`
	}
	var in any
	if call != nil {
		in = call
	}
	return &res.Run, c.do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+verb, in, &res)
}

// AnswerRun answers the question a run waits for input on with content
// (a JSON object fitting the question's schema; none for a url question).
// question, if not empty, names the question answered: the API answers
// conflict unless the run waits on exactly that one.
func (c *Client) AnswerRun(ctx context.Context, id, question string, content json.RawMessage) (*Run, error) {
	return c.replyRun(ctx, id, "/answer", Reply{Question: question, Content: content})
}

// DeclineRun declines the question a run waits for input on.
func (c *Client) DeclineRun(ctx context.Context, id, question string) (*Run, error) {
	return c.replyRun(ctx, id, "/decline", Reply{Question: question})
}

func (c *Client) replyRun(ctx context.Context, id, verb string, r Reply) (*Run, error) {
	var res struct {
		Run Run `json:"run"`
	}
	return &res.Run, c.do(ctx, http.MethodPost, "/v1/runs/"+url.PathEscape(id)+verb, r, &res)
}

func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		data, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.BaseURL, "/")+path, body)
	if err != nil {
		return fmt.Errorf("api: %w", err)
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("api: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		return fmt.Errorf("api: reading the response: %w", err)
	}
	if len(data) > MaxResponseBytes {
		return fmt.Errorf("api: %s %s: the response is larger than %d bytes (api.MaxResponseBytes)", method, path, MaxResponseBytes)
	}
	if resp.StatusCode/100 != 2 {
		e := &Error{Status: resp.StatusCode, Code: "internal", Message: resp.Status}
		var eb struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(data, &eb) == nil && eb.Error.Code != "" {
			e.Code, e.Message = eb.Error.Code, eb.Error.Message
		}
		return e
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return fmt.Errorf("api: decoding the response: %w", err)
		}
	}
	return nil
}
