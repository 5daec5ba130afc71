package mcp

import (
	"context"
	"encoding/json"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// serverListener is one open 2026-07-28 subscriptions/listen stream.
type serverListener struct {
	id     jsonrpc.ID
	out    serverOut
	filter SubscriptionFilter
}

// send writes a notification of the stream: every one names the stream in
// its _meta.
func (l *serverListener) send(method string, params map[string]any) {
	params["_meta"] = map[string]any{"io.modelcontextprotocol/subscriptionId": l.id}
	raw, _ := json.Marshal(params)
	_ = l.out(&jsonrpc.Message{Method: method, Params: raw}) // a stream that broke ends the listen
}

// listen serves subscriptions/listen: it acknowledges what the server can
// send of the filter asked for (tools' list changes), then holds the
// request open, delivering them, until the client goes away.
func (ss *serverSession) listen(ctx context.Context, m *jsonrpc.Message, p *incomingParams, out serverOut) (any, *jsonrpc.Error) {
	if out == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "subscriptions/listen needs an event stream: accept text/event-stream"}
	}
	var asked SubscriptionFilter
	if len(p.Notifications) > 0 {
		if err := json.Unmarshal(p.Notifications, &asked); err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "notifications: " + err.Error()}
		}
	}
	l := &serverListener{id: m.ID, out: out, filter: SubscriptionFilter{ToolsListChanged: asked.ToolsListChanged, ResourceSubscriptions: []string{}}}
	// Registered before the acknowledgment: a client told it is
	// listening may be told of a change at once.
	ss.mu.Lock()
	if ss.listeners == nil {
		ss.listeners = map[*serverListener]bool{}
	}
	ss.listeners[l] = true
	ss.mu.Unlock()
	defer func() {
		ss.mu.Lock()
		delete(ss.listeners, l)
		ss.mu.Unlock()
	}()
	l.send("notifications/subscriptions/acknowledged", map[string]any{"notifications": l.filter})
	<-ctx.Done()
	return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "subscription ended: " + context.Cause(ctx).Error()}
}

// notifyListChanged tells the session's client that list changed, on the
// channel its transport has for it: the stdio connection, the HTTP
// session's standalone stream, or its listen streams.
func (ss *serverSession) notifyListChanged(list string) {
	method := "notifications/" + list + "/list_changed"
	ss.mu.Lock()
	notify := ss.notify
	var ls []*serverListener
	for l := range ss.listeners {
		if list == "tools" && l.filter.ToolsListChanged {
			ls = append(ls, l)
		}
	}
	ss.mu.Unlock()
	for _, l := range ls {
		l.send(method, map[string]any{})
	}
	if notify != nil && len(ls) == 0 {
		_ = notify(&jsonrpc.Message{Method: method}) // a client gone cannot be told
	}
}
