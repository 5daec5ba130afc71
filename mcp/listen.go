package mcp

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
)

// SubscriptionFilter says what a 2026-07-28 subscriptions/listen stream
// carries: list-changed notifications for tools, prompts and resources, and
// notifications/resources/updated for the resources named.
type SubscriptionFilter struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

// ErrSubscriptionEnded reports a subscriptions/listen stream that the server
// ended (with notifications/cancelled naming it) rather than the client: the
// caller may listen again.
var ErrSubscriptionEnded = errors.New("mcp: the server ended the subscription")

// errListenOpen refuses a second Listen while one is open: the server's
// acknowledgment names the stream by its request id, which the client keeps
// for one stream only.
var errListenOpen = errors.New("mcp: a subscriptions/listen stream is already open on this client")

// listenForever is a listen's Timeout: it lasts until its context ends.
const listenForever = math.MaxInt64

// Listen opens a 2026-07-28 subscriptions/listen stream asking for what
// filter names, and delivers what the stream carries to
// [ClientOptions].OnListChanged and OnResourceUpdated (as handshake-era
// servers' notifications are) until ctx ends or the server ends the stream.
// It blocks: run it on a goroutine of its own. onAck, if set, is told (on a
// goroutine of its own) what the server agreed to send, once it has.
//
// When ctx ends the stream is closed on the wire as any interrupted request
// is — notifications/cancelled naming it on stdio, its response stream
// closed over HTTP — and Listen returns an error matching [ErrCancelled] (or
// [ErrTimeout] for a deadline). A server that ends the stream gracefully (its
// listen result) makes Listen return nil; one that cancels it, an error
// matching [ErrSubscriptionEnded]. The client's RequestTimeout does not
// apply. One stream at a time per client; handshake-era revisions have no
// such method (use [Client.Subscribe]) and get an error matching
// [errors.ErrUnsupported], with nothing sent.
func (c *Client) Listen(ctx context.Context, filter SubscriptionFilter, onAck func(SubscriptionFilter)) error {
	if !c.rev.mrtr {
		return fmt.Errorf("mcp: subscriptions/listen is not part of revision %s: %w", c.rev.name, errors.ErrUnsupported)
	}
	if !c.listen.open(onAck) {
		return errListenOpen
	}
	defer c.listen.close()
	if filter.ResourceSubscriptions == nil {
		filter.ResourceSubscriptions = []string{}
	}
	err := c.request(ctx, "subscriptions/listen", &listenParams{Notifications: filter}, &CallOptions{Timeout: listenForever}, false, &resultKind{})
	var ended *subscriptionEndedError
	if errors.As(err, &ended) {
		return fmt.Errorf("%w: %s", ErrSubscriptionEnded, ended.reason)
	}
	return err
}

type listenParams struct {
	paramsBase
	Notifications SubscriptionFilter `json:"notifications"`
}

// listenState is the client's one listen stream: who to tell of its
// acknowledgment.
type listenState struct {
	mu     sync.Mutex
	active bool
	onAck  func(SubscriptionFilter)
}

func (l *listenState) open(onAck func(SubscriptionFilter)) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active {
		return false
	}
	l.active, l.onAck = true, onAck
	return true
}

func (l *listenState) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.active, l.onAck = false, nil
}

func (l *listenState) ackHandler() func(SubscriptionFilter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.onAck
}

// subscriptionEndedError ends a listen whose stream the server cancelled.
type subscriptionEndedError struct{ reason string }

func (e *subscriptionEndedError) Error() string {
	return "the server ended the subscription: " + e.reason
}

// receiveListenNotification handles what only a listen stream carries: its
// acknowledgment and, on 2026-07-28, a server's notifications/cancelled,
// which can only end a listen (the client's request). It reports whether m
// was one of those.
func (c *Client) receiveListenNotification(method string, params json.RawMessage) bool {
	switch {
	case method == "notifications/subscriptions/acknowledged":
		var p struct {
			Notifications SubscriptionFilter `json:"notifications"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			c.logger.Warn("mcp: ignoring a malformed subscription acknowledgment", "error", err)
			return true
		}
		if f := c.listen.ackHandler(); f != nil {
			c.goBackground(func() { f(p.Notifications) })
		}
		return true
	case method == "notifications/cancelled" && c.rev.metaEnvelope:
		var p struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    string          `json:"reason"`
		}
		if err := json.Unmarshal(params, &p); err != nil {
			return true
		}
		var id int64
		if json.Unmarshal(p.RequestID, &id) == nil {
			c.endListen(id, cmp.Or(strings.TrimSpace(p.Reason), "no reason given"))
		}
		return true
	}
	return false
}

// endListen ends the in-flight request id, which a 2026-07-28 server
// cancelled: only a listen may be.
func (c *Client) endListen(id int64, reason string) {
	c.mu.Lock()
	cl := c.calls[id]
	delete(c.calls, id)
	c.mu.Unlock()
	if cl != nil {
		cl.reply <- reply{err: &subscriptionEndedError{reason: reason}}
	}
}
