package main

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/andonhq/andon/api"
)

// andon answer and andon decline: reply to the question a server asked the
// operator during a run (MCP elicitation).

// fieldFlags collects --field NAME=VALUE, in order.
type fieldFlags []string

func (f *fieldFlags) String() string { return strings.Join(*f, ",") }
func (f *fieldFlags) Set(v string) error {
	if name, _, ok := strings.Cut(v, "="); !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", v)
	}
	*f = append(*f, v)
	return nil
}

func runAnswer(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "answer", "andon answer RUN (--json '{...}' | --field NAME=VALUE ...)",
		"Answer the question a server asked during a run, which waits for input (andon show RUN\n"+
			"shows the question and the fields it asks for). The answer must fit the question's schema;\n"+
			"it reaches the server from whichever process holds the call, and the run goes on. The\n"+
			"audit log records who answered and which fields, never their values.\n\n"+
			"--field values are typed by the question's schema (integer, number, boolean, else text).\n"+
			"A url question takes no fields: answering it says you have been to the URL, which andon\n"+
			"shows and never opens.")
	af := addAPIConnFlags(fs) // --json is the answer here
	raw := fs.String("json", "", "the answer as a JSON `object`")
	var fields fieldFlags
	fs.Var(&fields, "field", "one field of the answer, as `NAME=VALUE` (repeatable)")
	id, code, ok := parseRunID(fs, args)
	if !ok {
		return code
	}
	if *raw != "" && len(fields) > 0 {
		return fs.usageError("give --json or --field, not both")
	}
	if *raw != "" && (!json.Valid([]byte(*raw)) || !strings.HasPrefix(strings.TrimSpace(*raw), "{")) {
		return fs.usageError("--json must be a JSON object")
	}
	c, code, ok := af.client(ctx, e)
	if !ok {
		return code
	}
	// The reply names the question, so what is answered is what was
	// looked at: if the run moved on meanwhile, the API refuses.
	q, code, ok := waitingQuestion(ctx, e, c, id)
	if !ok {
		return code
	}
	content := json.RawMessage(*raw)
	if len(fields) > 0 {
		var err error
		if content, err = fieldsAnswer(q.Schema, fields); err != nil {
			return fs.usageError("%v", err)
		}
	}
	if q.Mode == "form" && len(content) == 0 {
		return fs.usageError("the question asks for fields: give --json or --field (andon show %s shows them)", id)
	}
	run, err := c.AnswerRun(ctx, id, q.ID, content)
	if err != nil {
		return apiError(e, err)
	}
	fmt.Fprintf(e.stdout, "%s: %s (answered %s's question %s)\n", run.ID, run.Status, printable(q.Server), printable(q.ID))
	return exitOK
}

func runDecline(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "decline", "andon decline RUN",
		"Decline the question a server asked during a run: the server is told decline, and the run goes on.")
	af := addAPIFlags(fs)
	id, code, ok := parseRunID(fs, args)
	if !ok {
		return code
	}
	c, code, ok := af.client(ctx, e)
	if !ok {
		return code
	}
	q, code, ok := waitingQuestion(ctx, e, c, id)
	if !ok {
		return code
	}
	run, err := c.DeclineRun(ctx, id, q.ID)
	if err != nil {
		return apiError(e, err)
	}
	if af.json {
		return printJSON(e, run)
	}
	fmt.Fprintf(e.stdout, "%s: %s (declined %s's question %s)\n", run.ID, run.Status, printable(q.Server), printable(q.ID))
	return exitOK
}

// fieldsAnswer makes an answer of NAME=VALUE fields, each value typed by
// the schema's property of that name.
func fieldsAnswer(schema json.RawMessage, fields []string) (json.RawMessage, error) {
	var s struct {
		Properties map[string]struct {
			Type string `json:"type"`
		} `json:"properties"`
	}
	json.Unmarshal(schema, &s)
	out := map[string]any{}
	for _, f := range fields {
		name, value, _ := strings.Cut(f, "=")
		switch s.Properties[name].Type {
		case "integer":
			n, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("field %s: want an integer", name)
			}
			out[name] = n
		case "number":
			n, err := strconv.ParseFloat(value, 64)
			if err != nil {
				return nil, fmt.Errorf("field %s: want a number", name)
			}
			out[name] = n
		case "boolean":
			b, err := strconv.ParseBool(value)
			if err != nil {
				return nil, fmt.Errorf("field %s: want true or false", name)
			}
			out[name] = b
		default:
			out[name] = value
		}
	}
	return json.Marshal(out)
}

// printQuestion shows the question a run waits on: what andon answer
// answers. The server's text is printed as text, made printable.
func printQuestion(e *env, id string, q *api.Question) {
	fmt.Fprintf(e.stdout, "  waiting for input: server %s asks (during %s, until %s):\n      %s\n",
		printable(q.Server), printable(q.Tool), q.ExpiresAt.Format("15:04:05 MST"), printable(q.Message))
	if q.Mode == "url" {
		fmt.Fprintf(e.stdout, "    visit (andon does not open it): %s\n", printable(q.URL))
		fmt.Fprintf(e.stdout, "    then: andon answer %s, or andon decline %s\n", id, id)
		return
	}
	var s struct {
		Properties map[string]struct {
			Type        string `json:"type"`
			Title       string `json:"title"`
			Description string `json:"description"`
			Format      string `json:"format"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	json.Unmarshal(q.Schema, &s)
	for _, name := range slices.Sorted(maps.Keys(s.Properties)) {
		p := s.Properties[name]
		req := ""
		if slices.Contains(s.Required, name) {
			req = ", required"
		}
		fmt.Fprintf(e.stdout, "    field %s (%s%s) %s\n", printable(name), printable(cmpOr(p.Format, p.Type)), req, printable(cmpOr(p.Title, p.Description)))
	}
	fmt.Fprintf(e.stdout, "    answer with: andon answer %s --field NAME=VALUE …, or andon decline %s\n", id, id)
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// waitingQuestion is the question the run id waits on, or the exit code
// to return when it waits on none.
func waitingQuestion(ctx context.Context, e *env, c *api.Client, id string) (*api.Question, int, bool) {
	d, err := c.GetRun(ctx, id)
	if err != nil {
		return nil, apiError(e, err), false
	}
	if d.Question == nil {
		e.errorf("run %s is not waiting for input (status %s)", id, d.Run.Status)
		return nil, exitFailure, false
	}
	return d.Question, 0, true
}
