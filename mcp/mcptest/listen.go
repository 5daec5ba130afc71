package mcptest

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// Record kinds of 2026-07-28 subscriptions/listen streams.
const (
	// ListenStarted: a listen stream (ID) was acknowledged; Params holds
	// the filter it asked for.
	ListenStarted = "listen_started"
	// ListenEnded: it ended (ID); Reason says how: the client went away
	// (cancelled, with the cause), or the server ended it ("result",
	// "cancelled by the server").
	ListenEnded = "listen_ended"
)

// listenFilter is a subscriptions/listen request's notifications.
type listenFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// listener is one open listen stream.
type listener struct {
	id     jsonrpc.ID
	out    outbox
	filter listenFilter
	end    chan string // how the server ends it: "result" or "cancel"
}

// meta is the _meta every message of the stream carries.
func (l *listener) meta() map[string]any {
	return map[string]any{"io.modelcontextprotocol/subscriptionId": l.id}
}

func (l *listener) notify(method string, params map[string]any) {
	params["_meta"] = l.meta()
	l.out.write(&jsonrpc.Message{Method: method, Params: mustJSON(params)})
}

// listen serves subscriptions/listen (2026-07-28): it acknowledges the
// whole filter, then holds the request open, delivering what the
// mcptest://change and mcptest://touch resources announce, until the client
// goes away (closing the stream, or notifications/cancelled on stdio) or
// mcptest://unlisten ends it.
func (c *serverConn) listen(ctx context.Context, m *jsonrpc.Message, out outbox) {
	var p struct {
		Notifications listenFilter `json:"notifications"`
	}
	if err := json.Unmarshal(m.Params, &p); err != nil {
		reply(out, m.ID, nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "params: " + err.Error()})
		return
	}
	l := &listener{id: m.ID, out: out, filter: p.Notifications, end: make(chan string, 1)}
	// Registered before the acknowledgment: a client told it is listening
	// may announce a change at once.
	c.s.mu.Lock()
	if c.s.listeners == nil {
		c.s.listeners = map[*listener]bool{}
	}
	c.s.listeners[l] = true
	c.s.mu.Unlock()
	filter, _ := json.Marshal(p.Notifications)
	c.s.rec.add(Record{Kind: ListenStarted, ID: idKey(m.ID), Params: filter})
	l.notify("notifications/subscriptions/acknowledged", map[string]any{"notifications": p.Notifications})
	c.spawn(ctx, m, func(rctx context.Context, key string) {
		// Unregistered before the client can learn that the stream ended:
		// a listen it opens next must be the only one open.
		drop := func() {
			c.s.mu.Lock()
			delete(c.s.listeners, l)
			c.s.mu.Unlock()
		}
		select {
		case <-rctx.Done():
			drop()
			reason := "cancelled"
			if cause := context.Cause(rctx); cause != nil {
				reason = cause.Error()
			}
			c.s.rec.add(Record{Kind: ListenEnded, ID: key, Reason: reason})
		case how := <-l.end:
			drop()
			if how == "result" {
				reply(out, m.ID, map[string]any{"resultType": "complete", "_meta": l.meta()}, nil)
			} else {
				out.write(&jsonrpc.Message{Method: "notifications/cancelled", Params: mustJSON(map[string]any{"requestId": m.ID, "reason": "mcptest ended the subscription"})})
				how = "cancelled by the server"
			}
			c.s.rec.add(Record{Kind: ListenEnded, ID: key, Reason: how})
		}
	})
}

// openListeners returns the listen streams open now.
func (s *Server) openListeners() []*listener {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ls []*listener
	for l := range s.listeners {
		ls = append(ls, l)
	}
	return ls
}

// announceListChanged sends notifications/{list}/list_changed on every
// listen stream that asked for it, and returns how many did.
func (s *Server) announceListChanged(list string) int {
	n := 0
	for _, l := range s.openListeners() {
		wants := map[string]bool{"tools": l.filter.ToolsListChanged, "prompts": l.filter.PromptsListChanged, "resources": l.filter.ResourcesListChanged}[list]
		if wants {
			l.notify("notifications/"+list+"/list_changed", map[string]any{})
			n++
		}
	}
	return n
}

// touchSubscribed sends notifications/resources/updated for every resource
// each listen stream subscribed to, and returns how many it sent.
func (s *Server) touchSubscribed() int {
	n := 0
	for _, l := range s.openListeners() {
		for _, uri := range slices.Sorted(slices.Values(l.filter.ResourceSubscriptions)) {
			l.notify("notifications/resources/updated", map[string]any{"uri": uri})
			n++
		}
	}
	return n
}

// endListeners ends every listen stream, how being "result" (the listen's
// response) or "cancel" (notifications/cancelled naming it), and returns
// how many it ended.
func (s *Server) endListeners(how string) int {
	ls := s.openListeners()
	for _, l := range ls {
		select {
		case l.end <- how:
		default:
		}
	}
	return len(ls)
}
