package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/api"
	"github.com/andonhq/andon/audit"
	"github.com/andonhq/andon/model/script"
)

// The run commands talk to a running `andon serve` through its API. The
// runtime lives there: it executes runs, and a cancel made through it
// reaches the wire at once.

// apiFlags are the flags of the commands that use the API.
type apiFlags struct {
	addr  string
	token string
	json  bool

	fs *flagSet // for reporting a bad --api
}

// envToken names the environment variable holding the API token, for the
// commands that use the API when --token is not given.
const envToken = "ANDON_TOKEN"

func addAPIFlags(fs *flagSet) *apiFlags {
	f := addAPIConnFlags(fs)
	fs.BoolVar(&f.json, "json", false, "print JSON")
	return f
}

// addAPIConnFlags adds the flags that reach andon serve (--api, --token)
// without --json: for a command whose --json means something else.
func addAPIConnFlags(fs *flagSet) *apiFlags {
	f := &apiFlags{fs: fs}
	fs.StringVar(&f.addr, "api", "", "the `address` of the running andon serve: host:port, or its URL as serve prints it (http://127.0.0.1:7711); default: "+envAPI+" if set, else "+defaultAPI)
	fs.StringVar(&f.token, "token", "", "the API `token`; default: "+envToken+" if set, else the file "+defaultTokenFile+
		" in the current directory (what andon serve writes on first start). Prefer those: a command line is visible to every user of the machine")
	return f
}

// apiToken is the token to send: --token, else ANDON_TOKEN, else the
// token file in the current directory; empty if none (the server then
// answers 401, and apiError says where a token comes from).
func (f *apiFlags) apiToken() string {
	if f.token != "" {
		return f.token
	}
	if v := os.Getenv(envToken); v != "" {
		return strings.TrimSpace(v)
	}
	data, err := os.ReadFile(defaultTokenFile)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(data))
}

// client returns an API client of the serve at --api, else ANDON_API,
// else the default address; or, having said what is wrong (a bad address:
// a usage error; no serve answering: a transport failure), an exit code.
func (f *apiFlags) client(ctx context.Context, e *env) (*api.Client, int, bool) {
	addr, from := f.addr, "--api"
	if addr == "" {
		addr, from = os.Getenv(envAPI), envAPI
	}
	if addr == "" {
		addr = defaultAPI
	}
	base, err := apiBaseURL(addr)
	if err != nil {
		return nil, f.fs.usageError("%s: %v", from, err), false
	}
	c := &api.Client{BaseURL: base, HTTP: &http.Client{Timeout: 30 * time.Second}, Token: f.apiToken()}
	probe, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := c.Health(probe); err != nil {
		e.errorf("no andon serve answers on %s (start one with: andon serve)", addr)
		return nil, exitTransport, false
	}
	return c, 0, true
}

// apiError turns an API failure into a message and an exit code.
func apiError(e *env, err error) int {
	var ae *api.Error
	if errors.As(err, &ae) {
		e.errorf("%s", ae.Message)
		if ae.Code == "unauthenticated" {
			fmt.Fprintf(e.stderr, "andon: give a token with --token, %s, or the file %s in the current directory (andon token create makes one)\n",
				envToken, defaultTokenFile)
		}
		if ae.Code == "bad_request" {
			return exitUsage
		}
		return exitFailure
	}
	e.errorf("%v", err)
	return exitTransport
}

func runRun(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "run", "andon run --script FILE [--prompt TEXT] [--wait]",
		"Start a run whose model plays a script (JSON or YAML), and print its id.\n"+
			"With --wait, follow it to its end; Ctrl-C then cancels the run.")
	af := addAPIFlags(fs)
	scriptPath := fs.String("script", "", "the model script `file` (required)")
	prompt := fs.String("prompt", "Run the script.", "the run's opening `message`")
	wait := fs.Bool("wait", false, "wait for the run to end, printing its steps")
	if _, code, ok := fs.parse(args); !ok {
		return code
	}
	if *scriptPath == "" {
		return fs.usageError("--script is required")
	}
	data, err := os.ReadFile(*scriptPath)
	if err != nil {
		return fs.usageError("%v", err)
	}
	s, err := script.Parse(data)
	if err != nil {
		return fs.usageError("%s: %v", *scriptPath, err)
	}
	raw, err := json.Marshal(s)
	if err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	c, code, ok := af.client(ctx, e)
	if !ok {
		return code
	}
	run, err := c.CreateRun(ctx, &agent.Request{Prompt: *prompt, Model: "script", Script: raw})
	if err != nil {
		return apiError(e, err)
	}
	if !*wait {
		if af.json {
			return printJSON(e, run)
		}
		fmt.Fprintln(e.stdout, run.ID)
		return exitOK
	}
	fmt.Fprintf(e.stderr, "andon: run %s started; Ctrl-C cancels it\n", run.ID)
	return follow(ctx, e, c, run.ID, af.json)
}

// follow prints a run's steps as they come until it ends; an interrupt
// cancels the run through the API and follows it to its end.
func follow(ctx context.Context, e *env, c *api.Client, id string, asJSON bool) int {
	printed := 0
	cancelled := false
	for {
		d, err := c.GetRun(context.WithoutCancel(ctx), id)
		if err != nil {
			return apiError(e, err)
		}
		for ; printed < len(d.Steps); printed++ {
			if !asJSON {
				printStep(e, d.Steps[printed])
			}
		}
		if agent.Status(d.Run.Status).Terminal() || d.Run.Status == string(agent.StatusWaitingForApproval) {
			if asJSON {
				printJSON(e, d)
			} else {
				fmt.Fprintf(e.stdout, "%s: %s%s\n", d.Run.ID, d.Run.Status, suffix(d.Run.Reason))
				warnFailedCalls(e, d)
			}
			switch agent.Status(d.Run.Status) {
			case agent.StatusCompleted, agent.StatusWaitingForApproval:
				return exitOK
			case agent.StatusCancelled:
				if cancelled {
					return exitSignal
				}
			}
			return exitFailure
		}
		if ctx.Err() != nil && !cancelled {
			cancelled = true
			res, err := c.CancelRun(context.WithoutCancel(ctx), id)
			if err != nil {
				return apiError(e, err)
			}
			fmt.Fprintf(e.stderr, "andon: cancelled run %s (%.1f ms)\n", id, res.TookMS)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// warnFailedCalls says on stderr that a completed run did not do all it
// was asked: a tool call that failed (a tool no server offers, a server
// that is down, a tool's error) is told to the model, which may go on to
// an answer, so "completed" alone would hide it.
func warnFailedCalls(e *env, d *api.RunDetail) {
	if d.Run.Status != string(agent.StatusCompleted) {
		return
	}
	var failed []string
	calls := 0
	for _, st := range d.Steps {
		if st.Kind != string(agent.StepTool) {
			continue
		}
		calls++
		if st.Outcome == string(agent.OutcomeFailed) {
			failed = append(failed, fmt.Sprintf("step %d %s", st.Seq, printable(st.Tool)))
		}
	}
	if len(failed) > 0 {
		e.errorf("run %s completed, but %d of its %d tool calls failed (%s); the model was told, and went on",
			d.Run.ID, len(failed), calls, strings.Join(failed, ", "))
	}
}

func suffix(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + printable(reason) + ")"
}

// printStep prints one step as one line: the model's and the servers'
// words (text, tool names, arguments) made printable, never interpreted.
func printStep(e *env, s api.Step) {
	switch s.Kind {
	case string(agent.StepModel):
		text := s.Text
		if text == "" {
			text = "(asks for tools)"
		}
		fmt.Fprintf(e.stdout, "  %d model: %s\n", s.Seq, oneLine(text))
	case string(agent.StepTool):
		fmt.Fprintf(e.stdout, "  %d tool %s → %s (%.0f ms): %s\n", s.Seq, printable(s.Tool), s.Outcome, s.DurationMS, oneLine(s.Text))
	case string(agent.StepApproval):
		fmt.Fprintf(e.stdout, "  %d approval %s %s → %s, %s\n", s.Seq, printable(s.Tool), oneLine(compactJSON(s.Args)), s.Outcome, oneLine(s.Text))
	case string(agent.StepLog):
		var a struct{ Server, Level, Logger string }
		json.Unmarshal(s.Args, &a)
		fmt.Fprintf(e.stdout, "  %d log %s [%s] %s: %s\n", s.Seq, printable(a.Server), printable(a.Level), printable(a.Logger), oneLine(s.Text))
	default:
		fmt.Fprintf(e.stdout, "  %d %s %s → %s %s\n", s.Seq, printable(s.Kind), printable(s.Tool), s.Outcome, oneLine(s.Text))
	}
}

// oneLine is s as printable makes it, cut to 120 characters.
func oneLine(s string) string {
	s = printable(s)
	if utf8.RuneCountInString(s) > 120 {
		s = string([]rune(s)[:117]) + "..."
	}
	return s
}

func printJSON(e *env, v any) int {
	if err := writeJSONTo(e.stdout, v, true); err != nil {
		e.errorf("%v", err)
		return exitFailure
	}
	return exitOK
}

func runRuns(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "runs", "andon runs [--status S] [--limit N] [--before RUN]", "List runs, newest first, a page at a time.")
	af := addAPIFlags(fs)
	status := fs.String("status", "", "only runs in this `status`")
	limit := fs.Int("limit", 20, "at most `N` runs (1 to 1000)")
	before := fs.String("before", "", "only runs older than `RUN`: the next page, as the last one said")
	if _, code, ok := fs.parse(args); !ok {
		return code
	}
	c, code, ok := af.client(ctx, e)
	if !ok {
		return code
	}
	page, err := c.ListRunsPage(ctx, agent.RunFilter{Status: agent.Status(*status), Limit: *limit, Before: *before})
	if err != nil {
		return apiError(e, err)
	}
	runs := page.Runs
	if page.NextBefore != "" {
		fmt.Fprintf(e.stderr, "andon: more runs: add --before %s for the next page\n", page.NextBefore)
	}
	if af.json {
		return printJSON(e, runs)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "RUN\tSTATUS\tREASON\tFENCE\tOWNER\tCREATED")
	for _, r := range runs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", r.ID, r.Status, printable(r.Reason), r.PendingEffect, printable(r.Owner), r.CreatedAt.Local().Format(time.DateTime))
	}
	tw.Flush()
	return exitOK
}

// parseRunID parses the command line of a command that acts on one run,
// given by its id, the only argument.
func parseRunID(fs *flagSet, args []string) (id string, code int, ok bool) {
	pos, code, ok := fs.parse(args)
	if !ok {
		return "", code, false
	}
	if len(pos) != 1 {
		return "", fs.usageError("want one run id"), false
	}
	return pos[0], 0, true
}

func runShow(ctx context.Context, e *env, args []string) int {
	fs := newFlagSet(e, "show", "andon show RUN", "Show a run: its status, its write fence, its steps and its audit rows.")
	af := addAPIFlags(fs)
	id, code, ok := parseRunID(fs, args)
	if !ok {
		return code
	}
	c, code, ok := af.client(ctx, e)
	if !ok {
		return code
	}
	d, err := c.GetRun(ctx, id)
	if err != nil {
		return apiError(e, err)
	}
	if af.json {
		return printJSON(e, d)
	}
	r := d.Run
	fmt.Fprintf(e.stdout, "run %s (owner %s)\n  status: %s%s\n", r.ID, printable(r.Owner), r.Status, suffix(r.Reason))
	if r.Error != "" {
		fmt.Fprintf(e.stdout, "  error: %s\n", printable(r.Error))
	}
	fence := r.PendingEffect
	if fence == "" {
		fence = "clear"
	}
	fmt.Fprintf(e.stdout, "  write fence: %s\n", fence)
	if g := r.Gateway; g != nil {
		fmt.Fprintf(e.stdout, "  gateway call: %s for client %q, session %s (andon sessions)\n", printable(g.Tool), printable(g.Client), printable(g.Session))
	}
	if p := r.Pending; p != nil {
		printPending(e, r.ID, p)
	}
	if q := d.Question; q != nil {
		printQuestion(e, r.ID, q)
	}
	fmt.Fprintln(e.stdout, "  steps:")
	for _, s := range d.Steps {
		printStep(e, s)
	}
	if len(d.Approvals) > 0 {
		fmt.Fprintln(e.stdout, "  decisions:")
	}
	for _, a := range d.Approvals {
		what := "approved"
		switch {
		case !a.Approved:
			what = "denied"
		case a.Override:
			what = "approved (admin override of four eyes)"
		}
		fmt.Fprintf(e.stdout, "    step %d call %d %s %s by %s at %s, args %s\n", a.Step, a.Call, printable(a.Tool), what, printable(a.By),
			a.At.Local().Format(time.DateTime), a.ArgsDigest)
	}
	printRunTasks(e, d.Tasks)
	fmt.Fprintln(e.stdout, "  audit:")
	if len(d.Audit) == 0 {
		fmt.Fprintln(e.stdout, "    (no rows: no tool call, no outbound HTTP)")
	}
	if d.AuditNextBefore != 0 {
		fmt.Fprintf(e.stdout, "    (older rows not shown: andon audit list --run %s, or GET /v1/audit?run=%s&before=%d)\n",
			r.ID, r.ID, d.AuditNextBefore)
	}
	for _, a := range d.Audit {
		if strings.HasPrefix(a.Action, "call_") { // a decision on a tool call
			fmt.Fprintf(e.stdout, "    %d %s %s: %s (%s)\n", a.Seq, a.Action, printable(a.Purpose), printable(a.Path), printable(a.Reason))
			continue
		}
		if a.Action == string(audit.ActionToolCall) { // one row per tool call, on every transport
			fmt.Fprintf(e.stdout, "    %d %s server %s: %s (%s, %.0f ms)\n", a.Seq, a.Action, printable(a.Host), printable(a.Path), printable(a.Reason), a.DurationMS)
			continue
		}
		if a.Action == string(audit.ActionCancelOutcome) { // what became of a cancelled call
			fmt.Fprintf(e.stdout, "    %d %s server %s: %s (%s)\n", a.Seq, a.Action, printable(a.Host), printable(a.Path), printable(a.Reason))
			continue
		}
		if a.Action == string(audit.ActionTaskCancel) { // tasks/cancel for a call's MCP task
			fmt.Fprintf(e.stdout, "    %d %s %s: server %s, %s (%s)\n", a.Seq, a.Action, printable(a.Purpose), printable(a.Host), printable(a.Path), printable(a.Reason))
			continue
		}
		sent := "nothing left"
		if a.Sent {
			sent = "request (and any credential) left"
		}
		fmt.Fprintf(e.stdout, "    %d %s %s %s%s %d — %s\n", a.Seq, a.Action, printable(a.Method), printable(a.Host), printable(a.Path), a.Status, sent)
	}
	return exitOK
}

// compactJSON is raw without insignificant space, or raw if it is not
// JSON.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// printPending shows the call a run waits on: what `andon approve`
// approves.
func printPending(e *env, id string, p *api.PendingCall) {
	var args bytes.Buffer
	indentTo(&args, []byte(compactJSON(p.Args)), "      ", 2)
	fmt.Fprintf(e.stdout, "  waiting for approval of a call to %s with arguments:\n      %s\n", printable(p.Tool), args.Bytes())
	fmt.Fprintf(e.stdout, "    (step %d, call %d, model's id %q, args %s)\n", p.Step, p.Call, p.CallID, p.ArgsDigest)
	if p.FourEyes {
		fmt.Fprintln(e.stdout, "    four eyes: someone other than the run's owner must approve it (an admin may override)")
	}
	fmt.Fprintf(e.stdout, "    decide with: andon approve %s, or andon deny %s\n", id, id)
}

func runCancel(ctx context.Context, e *env, args []string) int {
	return decideCommand(ctx, e, args, "cancel", "Cancel a run: its call in flight is abandoned on the wire.")
}

func runApprove(ctx context.Context, e *env, args []string) int {
	return decideCommand(ctx, e, args, "approve", "Approve the tool call a run is waiting on (andon show RUN shows it); the run resumes and makes\n"+
		"that call. The approval names the call, and covers it only.")
}

func runDeny(ctx context.Context, e *env, args []string) int {
	return decideCommand(ctx, e, args, "deny", "Deny the tool call a run is waiting on; the call is not made, the model is told\n"+
		"that the operator denied it, and the run goes on.")
}

func decideCommand(ctx context.Context, e *env, args []string, verb, about string) int {
	fs := newFlagSet(e, verb, "andon "+verb+" RUN", about)
	af := addAPIFlags(fs)
	id, code, ok := parseRunID(fs, args)
	if !ok {
		return code
	}
	c, code, ok := af.client(ctx, e)
	if !ok {
		return code
	}
	var run *api.Run
	took := ""
	switch verb {
	case "cancel":
		res, err := c.CancelRun(ctx, id)
		if err != nil {
			return apiError(e, err)
		}
		run, took = &res.Run, fmt.Sprintf(" in %.1f ms", res.TookMS)
		if !af.json {
			printTaskCancels(e, res.Tasks)
		}
	default:
		// The decision names the call it is on, so what is printed is
		// exactly what was decided: if the run moved on to another call
		// meanwhile, the API refuses.
		d, err := c.GetRun(ctx, id)
		if err != nil {
			return apiError(e, err)
		}
		var ref *api.CallRef
		if p := d.Run.Pending; p != nil {
			ref = &p.CallRef
		}
		run, err = c.DecideCall(ctx, id, verb == "approve", ref)
		if err != nil {
			return apiError(e, err)
		}
		if p := d.Run.Pending; p != nil {
			done := "approved"
			if verb == "deny" {
				done = "denied"
			}
			took = fmt.Sprintf(" (%s %s %s, step %d, call %d)", done, printable(p.Tool), oneLine(compactJSON(p.Args)), p.Step, p.Call)
		}
	}
	if af.json {
		return printJSON(e, run)
	}
	fmt.Fprintf(e.stdout, "%s: %s%s\n", run.ID, run.Status, took)
	return exitOK
}
