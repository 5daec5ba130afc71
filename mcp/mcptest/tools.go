package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// toolList returns the tools s offers: bad_header and elicit only when
// asked for.
func (s *Server) toolList() []map[string]any {
	var out []map[string]any
	for _, t := range allTools() {
		if t["name"] == "bad_header" && !s.opts.InvalidTool || t["name"] == "elicit" && !s.opts.Elicit {
			continue
		}
		out = append(out, t)
	}
	if s.opts.Tasks {
		out = append(out, taskToolList()...)
	}
	return out
}

func allTools() []map[string]any {
	obj := func(props string) json.RawMessage {
		return json.RawMessage(`{"type":"object","properties":{` + props + `}}`)
	}
	ro := map[string]any{"readOnlyHint": true}
	return []map[string]any{
		{"name": "echo", "description": "Returns its text.", "inputSchema": obj(`"text":{"type":"string"}`), "annotations": ro},
		{"name": "slow", "description": "Sleeps ms milliseconds, honouring cancellation.", "inputSchema": obj(`"ms":{"type":"integer"}`)},
		{"name": "stubborn", "description": "Sleeps ms milliseconds, ignoring cancellation.", "inputSchema": obj(`"ms":{"type":"integer"}`)},
		{"name": "progress", "description": "Reports count progress steps.", "inputSchema": obj(`"count":{"type":"integer"},"interval_ms":{"type":"integer"}`)},
		{"name": "late", "description": "Answers after it is cancelled.", "inputSchema": obj(`"ms":{"type":"integer"}`)},
		{"name": "fail", "description": "Fails with isError.", "inputSchema": obj(`"message":{"type":"string"}`)},
		{"name": "big", "description": "Returns a large text.", "inputSchema": obj(`"bytes":{"type":"integer"}`)},
		{"name": "ask", "description": "Asks the client for its roots, or (what) its user for a name (elicitation) or its model for a message (sampling).",
			"inputSchema": obj(`"what":{"type":"string","enum":["roots","elicitation","sampling"]},"message":{"type":"string"},"first_ms":{"type":"integer"},"then_ms":{"type":"integer"}`)},
		elicitTool(),
		{"name": "crash", "description": "Ends the connection mid-call.", "inputSchema": obj(``)},
		{"name": "garbage", "description": "Writes a non-JSON line, then answers.", "inputSchema": obj(``)},
		{"name": "split", "description": "Writes its answer in two pieces.", "inputSchema": obj(``)},
		{"name": "unknown_id", "description": "Answers an id never sent, then answers.", "inputSchema": obj(``)},
		{"name": "bad_result", "description": "Answers with a malformed result.", "inputSchema": obj(``)},
		{"name": "stderr", "description": "Writes noise to stderr.", "inputSchema": obj(`"lines":{"type":"integer"}`)},
		{"name": "route", "description": "Echoes region and shard, which travel as Mcp-Param-* headers too.",
			"inputSchema": obj(`"region":{"type":"string","x-mcp-header":"Region"},"shard":{"type":"integer","x-mcp-header":"Shard"}`)},
		{"name": "bad_header", "description": "Declares an x-mcp-header on an object: clients must leave it out.",
			"inputSchema": obj(`"where":{"type":"object","x-mcp-header":"Where"}`)},
	}
}

// toolArgs are every tool's arguments, merged.
type toolArgs struct {
	Text       string `json:"text"`
	Message    string `json:"message"`
	MS         *int   `json:"ms"`
	Count      *int   `json:"count"`
	IntervalMS *int   `json:"interval_ms"`
	Bytes      *int   `json:"bytes"`
	Lines      *int   `json:"lines"`
	FirstMS    *int   `json:"first_ms"`
	Region     string `json:"region"`
	Shard      *int   `json:"shard"`
	ThenMS     *int   `json:"then_ms"`
	What       string `json:"what"`
	// elicit's (see elicit.go)
	Schema json.RawMessage `json:"schema"`
	Mode   string          `json:"mode"`
	URL    string          `json:"url"`
	Log    string          `json:"log"`
}

func intOr(p *int, def int) int {
	if p == nil {
		return def
	}
	return *p
}

func (c *serverConn) startTool(ctx context.Context, m *jsonrpc.Message, base baseParams, modern bool, out outbox) {
	var p struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	json.Unmarshal(m.Params, &p)
	var args toolArgs
	if len(p.Arguments) > 0 {
		if err := json.Unmarshal(p.Arguments, &args); err != nil {
			reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "arguments: " + err.Error()})
			return
		}
	}
	known := false
	for _, t := range c.s.toolList() {
		known = known || t["name"] == p.Name
	}
	if !known {
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "Unknown tool: " + p.Name})
		return
	}
	if _, ok := taskTools[p.Name]; ok {
		c.startTaskTool(ctx, m, p.Name, p.Arguments, base, modern, out)
		return
	}
	c.spawn(ctx, m, func(tctx context.Context, key string) {
		t := &toolCall{c: c, out: out, ctx: tctx, id: m.ID, key: key, name: p.Name, args: args, base: base, modern: modern}
		c.s.rec.add(Record{Kind: ToolStarted, Tool: p.Name, ID: key})
		t.run()
	})
}

// spawn runs a request's handler on a goroutine of its own, with a context
// that a notifications/cancelled naming the request (or the connection's
// end) cancels; the server's Close waits for it.
func (c *serverConn) spawn(ctx context.Context, m *jsonrpc.Message, run func(ctx context.Context, key string)) {
	key := idKey(m.ID)
	hctx, cancel := context.WithCancelCause(ctx)
	c.mu.Lock()
	c.inflight[key] = cancel
	c.mu.Unlock()
	c.handlers.Add(1)
	c.s.tools.Add(1)
	go func() {
		defer c.s.tools.Done()
		defer c.handlers.Done()
		defer func() {
			c.mu.Lock()
			delete(c.inflight, key)
			c.mu.Unlock()
			cancel(nil)
		}()
		run(hctx, key)
	}()
}

// toolCall is one running tool handler.
type toolCall struct {
	c      *serverConn
	out    outbox
	ctx    context.Context
	id     jsonrpc.ID
	key    string
	name   string
	args   toolArgs
	base   baseParams
	modern bool
}

func (t *toolCall) text(s string) map[string]any {
	res := map[string]any{"content": []map[string]any{{"type": "text", "text": s}}}
	if t.modern {
		res["resultType"] = "complete"
	}
	return res
}

func (t *toolCall) finish(result map[string]any) {
	if err := reply(t.out, t.id, result, nil); err == nil {
		t.c.s.rec.add(Record{Kind: ToolFinished, Tool: t.name, ID: t.key})
	}
}

// cancelled records that the handler saw the cancellation and sends nothing.
func (t *toolCall) cancelled() {
	reason := ""
	if cause := context.Cause(t.ctx); cause != nil {
		reason = cause.Error()
	}
	t.c.s.rec.add(Record{Kind: ToolCancelled, Tool: t.name, ID: t.key, Reason: reason})
}

func (t *toolCall) progress(n, total float64, msg string) {
	if t.base.Meta.ProgressToken == nil {
		return
	}
	params, _ := json.Marshal(map[string]any{"progressToken": t.base.Meta.ProgressToken, "progress": n, "total": total, "message": msg})
	t.out.write(&jsonrpc.Message{Method: "notifications/progress", Params: params})
}

// sleep waits d or until cancelled; it reports whether d passed.
func (t *toolCall) sleep(d time.Duration) bool {
	return sleepCtx(t.ctx, d)
}

// sleepCtx waits d or until ctx ends; it reports whether d passed.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (t *toolCall) run() {
	a := t.args
	switch t.name {
	case "echo":
		res := t.text(a.Text)
		res["structuredContent"] = map[string]any{"text": a.Text}
		t.finish(res)
	case "slow":
		t.progress(0, 1, "started")
		if !t.sleep(time.Duration(intOr(a.MS, 10000)) * time.Millisecond) {
			t.cancelled()
			return
		}
		t.finish(t.text(fmt.Sprintf("slept %dms", intOr(a.MS, 10000))))
	case "stubborn":
		time.Sleep(time.Duration(intOr(a.MS, 1000)) * time.Millisecond)
		t.finish(t.text("stubborn done"))
	case "progress":
		count := intOr(a.Count, 3)
		for i := 1; i <= count; i++ {
			if !t.sleep(time.Duration(intOr(a.IntervalMS, 10)) * time.Millisecond) {
				t.cancelled()
				return
			}
			t.progress(float64(i), float64(count), fmt.Sprintf("step %d of %d", i, count))
		}
		t.finish(t.text("progress done"))
	case "late":
		t.progress(0, 1, "started")
		if t.sleep(time.Duration(intOr(a.MS, 10000)) * time.Millisecond) {
			t.finish(t.text("late: never cancelled"))
			return
		}
		t.cancelled()
		t.progress(1, 1, "late progress")
		t.c.s.rec.add(Record{Kind: LateReply, Tool: t.name, ID: t.key})
		reply(t.out, t.id, t.text("late result"), nil)
	case "fail":
		res := t.text(cmpOr(a.Message, "the tool failed"))
		res["isError"] = true
		t.finish(res)
	case "big":
		t.finish(t.text(strings.Repeat("x", intOr(a.Bytes, 1<<20))))
	case "ask":
		q := rootsQuestion
		switch a.What {
		case "elicitation":
			q = elicitQuestion(cmpOr(a.Message, "What is your name?"))
		case "sampling":
			q = sampleQuestion(cmpOr(a.Message, "Say hello."))
		}
		t.askClient(q, time.Duration(intOr(a.FirstMS, 0))*time.Millisecond, time.Duration(intOr(a.ThenMS, 0))*time.Millisecond)
	case "elicit":
		t.elicit()
	case "crash":
		if a, ok := t.out.(aborter); ok {
			a.abort()
			return
		}
		t.c.cancel(errCrash)
	case "garbage":
		t.out.writeRaw([]byte("this is not JSON\n"))
		t.finish(t.text("after garbage"))
	case "split":
		data, _ := jsonrpc.Encode(&jsonrpc.Message{ID: t.id, Result: mustJSON(t.text("split answer"))})
		data = append(data, '\n')
		half := len(data) / 2
		t.out.writeRaw(data[:half], data[half:])
		t.c.s.rec.add(Record{Kind: ToolFinished, Tool: t.name, ID: t.key})
	case "unknown_id":
		t.out.write(&jsonrpc.Message{ID: jsonrpc.Int(987654321), Result: mustJSON(t.text("for nobody"))})
		t.finish(t.text("known id"))
	case "bad_result":
		t.out.write(&jsonrpc.Message{ID: t.id, Result: json.RawMessage(`{"content":"not a list"}`)})
	case "route":
		t.finish(t.text(fmt.Sprintf("region=%s shard=%d", a.Region, intOr(a.Shard, 0))))
	case "bad_header":
		t.finish(t.text("bad_header called"))
	case "stderr":
		for i := range intOr(a.Lines, 3) {
			fmt.Fprintf(t.c.s.opts.Stderr, "mcptest: stderr noise line %d\n", i+1)
		}
		t.finish(t.text("wrote to stderr"))
	}
}

const askState = "mcptest-state-1"

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
