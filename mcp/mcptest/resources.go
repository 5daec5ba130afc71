package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// Resources, all read-only:
//
//   - mcptest://static/hello: a text resource.
//   - mcptest://static/bytes: a blob, the bytes 0 to 255.
//   - mcptest://static/readme: another text resource (so PageSize 1 pages).
//   - mcptest://large/{bytes}: a text resource of that many bytes.
//   - mcptest://slow/{ms}: waits ms milliseconds, honouring cancellation
//     (recording ReadStarted, then ReadCancelled or ReadFinished), then
//     answers with a text.
//   - mcptest://late/{ms}: waits ms milliseconds; cancelled first, it
//     answers anyway ("late contents", recording ReadCancelled and
//     LateReply), as a server that does not stop does.
//   - mcptest://bad/blob: a blob that is not base64 (a malformed result).
//   - mcptest://log/{level}: before answering, sends a log message of that
//     level (notifications/message, logger "mcptest", data "a {level}
//     message") unless logging/setLevel asked for a more severe level (on
//     2026-07-28: unless the request's _meta logLevel is missing or more
//     severe); its text says "logged" or "filtered".
//
//   - mcptest://touch: "changes" every resource the connection subscribed
//     to: sends notifications/resources/updated for each (before its
//     answer, which says how many). On 2026-07-28 it sends them on every
//     open subscriptions/listen stream, for the resources each subscribed
//     to.
//   - mcptest://change/{tools|resources|prompts}: sends
//     notifications/{list}/list_changed before answering; on 2026-07-28 on
//     every listen stream that asked for that list ("sent to N").
//   - mcptest://unlisten/{result|cancel} (2026-07-28): ends every listen
//     stream, with the listen's result or with notifications/cancelled
//     naming it ("ended N").
//
// resources/subscribe (handshake era) to any URI sends one
// notifications/resources/updated for it at once, then confirms; touch
// sends more until resources/unsubscribe.
//
// Any other URI is not found: -32002 on handshake-era revisions, -32602 on
// 2026-07-28, with the URI in the error's data.

func resourceList() []map[string]any {
	return []map[string]any{
		{"uri": "mcptest://static/hello", "name": "hello", "mimeType": "text/plain"},
		{"uri": "mcptest://static/bytes", "name": "bytes", "mimeType": "application/octet-stream", "size": 256},
		{"uri": "mcptest://static/readme", "name": "readme", "mimeType": "text/markdown"},
	}
}

var resourceTemplates = []map[string]any{
	{"uriTemplate": "mcptest://large/{bytes}", "name": "large", "mimeType": "text/plain"},
	{"uriTemplate": "mcptest://slow/{ms}", "name": "slow", "mimeType": "text/plain"},
	{"uriTemplate": "mcptest://log/{level}", "name": "log", "mimeType": "text/plain"},
}

// helloText is the text of mcptest://static/hello.
const helloText = "hello from mcptest"

func (c *serverConn) startRead(ctx context.Context, m *jsonrpc.Message, meta requestMeta, modern bool, out outbox) {
	var p struct {
		URI string `json:"uri"`
	}
	json.Unmarshal(m.Params, &p)
	complete := func(contents ...map[string]any) {
		res := map[string]any{"contents": contents}
		if modern {
			res["resultType"] = "complete"
		}
		reply(out, m.ID, res, nil)
	}
	text := func(s, mime string) map[string]any {
		return map[string]any{"uri": p.URI, "mimeType": mime, "text": s}
	}
	switch {
	case p.URI == "mcptest://static/hello":
		complete(text(helloText, "text/plain"))
	case p.URI == "mcptest://static/readme":
		complete(text("# mcptest\n", "text/markdown"))
	case p.URI == "mcptest://static/bytes":
		b := make([]byte, 256)
		for i := range b {
			b[i] = byte(i)
		}
		// encoding/json writes a []byte as base64, as the protocol's blob is.
		complete(map[string]any{"uri": p.URI, "mimeType": "application/octet-stream", "blob": b})
	case p.URI == "mcptest://touch" && modern:
		complete(text(fmt.Sprintf("%d updates", c.s.touchSubscribed()), "text/plain"))
	case p.URI == "mcptest://unlisten/result" || p.URI == "mcptest://unlisten/cancel":
		complete(text(fmt.Sprintf("ended %d", c.s.endListeners(strings.TrimPrefix(p.URI, "mcptest://unlisten/"))), "text/plain"))
	case p.URI == "mcptest://touch":
		c.mu.Lock()
		uris := slices.Sorted(maps.Keys(c.subs))
		c.mu.Unlock()
		for _, uri := range uris {
			c.updated(out, uri)
		}
		complete(text(fmt.Sprintf("%d updates", len(uris)), "text/plain"))
	case strings.HasPrefix(p.URI, "mcptest://change/"):
		list := strings.TrimPrefix(p.URI, "mcptest://change/")
		if !slices.Contains([]string{"tools", "resources", "prompts"}, list) {
			c.notFound(m, p.URI, modern, out)
			return
		}
		if modern {
			complete(text(fmt.Sprintf("sent to %d", c.s.announceListChanged(list)), "text/plain"))
			return
		}
		out.write(&jsonrpc.Message{Method: "notifications/" + list + "/list_changed"})
		complete(text("sent", "text/plain"))
	case strings.HasPrefix(p.URI, "mcptest://log/"):
		level := strings.TrimPrefix(p.URI, "mcptest://log/")
		if !slices.Contains(logLevels, level) {
			c.notFound(m, p.URI, modern, out)
			return
		}
		if !c.logs(level, meta, modern) {
			complete(text("filtered", "text/plain"))
			return
		}
		params, _ := json.Marshal(map[string]any{"level": level, "logger": "mcptest", "data": "a " + level + " message"})
		out.write(&jsonrpc.Message{Method: "notifications/message", Params: params})
		complete(text("logged", "text/plain"))
	case strings.HasPrefix(p.URI, "mcptest://large/"):
		n, ok := uriNumber(p.URI, "mcptest://large/")
		if !ok {
			c.notFound(m, p.URI, modern, out)
			return
		}
		complete(text(strings.Repeat("x", n), "text/plain"))
	case p.URI == "mcptest://bad/blob":
		// A blob that is not base64: the client must refuse the result, not
		// the connection.
		c.writeBadBlob(out, m, modern)
	case strings.HasPrefix(p.URI, "mcptest://late/"):
		ms, ok := uriNumber(p.URI, "mcptest://late/")
		if !ok {
			c.notFound(m, p.URI, modern, out)
			return
		}
		c.spawn(ctx, m, func(rctx context.Context, key string) {
			c.s.rec.add(Record{Kind: ReadStarted, URI: p.URI, ID: key})
			if sleepCtx(rctx, time.Duration(ms)*time.Millisecond) {
				complete(text("late: never cancelled", "text/plain"))
				return
			}
			c.s.rec.add(Record{Kind: ReadCancelled, URI: p.URI, ID: key})
			c.s.rec.add(Record{Kind: LateReply, URI: p.URI, ID: key})
			complete(text("late contents", "text/plain")) // for a request already cancelled
		})
	case strings.HasPrefix(p.URI, "mcptest://slow/"):
		ms, ok := uriNumber(p.URI, "mcptest://slow/")
		if !ok {
			c.notFound(m, p.URI, modern, out)
			return
		}
		c.spawn(ctx, m, func(rctx context.Context, key string) {
			c.s.rec.add(Record{Kind: ReadStarted, URI: p.URI, ID: key})
			if !sleepCtx(rctx, time.Duration(ms)*time.Millisecond) {
				reason := ""
				if cause := context.Cause(rctx); cause != nil {
					reason = cause.Error()
				}
				c.s.rec.add(Record{Kind: ReadCancelled, URI: p.URI, ID: key, Reason: reason})
				return
			}
			complete(text(fmt.Sprintf("slept %dms", ms), "text/plain"))
			c.s.rec.add(Record{Kind: ReadFinished, URI: p.URI, ID: key})
		})
	default:
		c.notFound(m, p.URI, modern, out)
	}
}

// uriNumber is the number, not negative, that ends uri after prefix: the
// size or delay a test resource's URI asks for.
func uriNumber(uri, prefix string) (int, bool) {
	n, err := strconv.Atoi(strings.TrimPrefix(uri, prefix))
	return n, err == nil && n >= 0
}

// writeBadBlob answers a read with a blob that is not base64.
func (c *serverConn) writeBadBlob(out outbox, m *jsonrpc.Message, modern bool) {
	res := map[string]any{"contents": []map[string]any{{"uri": "mcptest://bad/blob", "blob": "%%% not base64 %%%"}}}
	if modern {
		res["resultType"] = "complete"
	}
	reply(out, m.ID, res, nil)
}

// notFound answers a read of an unknown resource with the revision's error.
func (c *serverConn) notFound(m *jsonrpc.Message, uri string, modern bool, out outbox) {
	code := int64(-32002)
	if modern {
		code = jsonrpc.CodeInvalidParams // 2026-07-28 must not send -32002
	}
	reply(out, m.ID, nil, &jsonrpc.Error{Code: code, Message: "Resource not found", Data: mustJSON(map[string]string{"uri": uri})})
}

// subscribe answers resources/subscribe (sending one update for the URI
// first) and resources/unsubscribe.
func (c *serverConn) subscribe(m *jsonrpc.Message, out outbox) {
	var p struct {
		URI string `json:"uri"`
	}
	if json.Unmarshal(m.Params, &p) != nil || p.URI == "" {
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: a uri is required"})
		return
	}
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[string]bool{}
	}
	if m.Method == "resources/subscribe" {
		c.subs[p.URI] = true
	} else {
		delete(c.subs, p.URI)
	}
	c.mu.Unlock()
	if m.Method == "resources/subscribe" {
		c.updated(out, p.URI)
	}
	reply(out, m.ID, map[string]any{}, nil)
}

func (c *serverConn) updated(out outbox, uri string) {
	out.write(&jsonrpc.Message{Method: "notifications/resources/updated", Params: mustJSON(map[string]string{"uri": uri})})
}
