package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/andonhq/andon/mcp/internal/jsonrpc"
)

// ErrUnsupportedVersion reports that the client and server share no protocol
// revision (or not the pinned one).
var ErrUnsupportedVersion = errors.New("mcp: no protocol revision in common")

// The legs of connecting, as a [ConnectError] names them.
const (
	LegConnect     = "connect" // starting the subprocess, or reaching the endpoint
	LegDiscover    = "server/discover"
	LegInitialize  = "initialize"
	LegInitialized = "notifications/initialized"
)

// ConnectError reports a [Connect] that failed, and the leg it failed in.
// Err says why; an interrupted leg's Err matches [ErrCancelled] or
// [ErrTimeout], as a call's does, so errors.Is works on a ConnectError as
// on any call error.
type ConnectError struct {
	Leg string // one of the Leg constants
	Err error
}

// Error names the leg that failed and why: "cancelled" or "timed out"
// with the interruption's cause, or the leg's own error.
func (e *ConnectError) Error() string {
	var ie *interruptedError
	if errors.As(e.Err, &ie) {
		what := "cancelled"
		if ie.kind == ErrTimeout {
			what = "timed out"
		}
		msg := "mcp: connecting: " + what + " during " + e.Leg
		if ie.cause != nil {
			msg += ": " + ie.cause.Error()
		}
		return msg
	}
	return "mcp: connecting: " + e.Leg + ": " + strings.TrimPrefix(e.Err.Error(), "mcp: ")
}

// Unwrap returns Err, so that errors.Is(err, ErrTimeout) and the like see
// through the ConnectError.
func (e *ConnectError) Unwrap() error { return e.Err }

// errConnectTimeout is the cause of a Connect stopped by ConnectTimeout.
var errConnectTimeout = fmt.Errorf("connect timeout (ClientOptions.ConnectTimeout) passed: %w", context.DeadlineExceeded)

// handshake negotiates the protocol revision. Unless a handshake-era revision
// is pinned, it probes with server/discover (2026-07-28); a server that
// answers it with its supported versions is modern, and any other answer, or
// none in time, means a handshake-era server, which gets initialize.
// Neither request is ever cancelled by notification. Every leg runs under
// ctx, which carries the connect budget; none has a bound that outlives it.
// A failure is a *ConnectError.
func (c *Client) handshake(ctx context.Context) error {
	var pinned revision
	if name := c.opts.ProtocolVersion; name != "" {
		var ok bool
		if pinned, ok = lookupRevision(name); !ok {
			return &ConnectError{Leg: LegConnect, Err: fmt.Errorf("%w: andon does not speak pinned revision %q", ErrUnsupportedVersion, name)}
		}
		if !pinned.discover {
			return c.initialize(ctx, pinned)
		}
	}
	modern, fallback, err := c.discover(ctx, pinned)
	switch {
	case err != nil:
		return &ConnectError{Leg: LegDiscover, Err: err}
	case modern:
		return nil
	case pinned.discover:
		return &ConnectError{Leg: LegDiscover, Err: fmt.Errorf("%w: server does not speak pinned revision %s", ErrUnsupportedVersion, pinned.name)}
	case fallback.name == "":
		fallback = newest(handshakeEra)
	}
	return c.initialize(ctx, fallback)
}

// discover probes for a server of a stateless revision: the pinned one, or
// else the newest andon speaks. It reports modern when the server accepted,
// or else, when the server listed the revisions it supports, the newest
// handshake-era one andon shares with it. err is set only when the caller's
// context ended or the connection failed.
func (c *Client) discover(ctx context.Context, pinned revision) (modern bool, fallback revision, err error) {
	accept := func(r revision) bool { return r.discover && (pinned.name == "" || r.name == pinned.name) }
	c.rev = newest(accept) // stamps the probe's _meta
	var res struct {
		resultKind
		SupportedVersions []string        `json:"supportedVersions"`
		Capabilities      json.RawMessage `json:"capabilities"`
		Instructions      string          `json:"instructions"`
		Meta              struct {
			ServerInfo Implementation `json:"io.modelcontextprotocol/serverInfo"`
		} `json:"_meta"`
	}
	var rpcErr *RPCError
	for attempt := 1; ; attempt++ {
		err = c.request(ctx, "server/discover", &emptyParams{}, &CallOptions{Timeout: c.opts.DiscoverTimeout}, true, &res)
		// A server may refuse the version and list a stateless one among
		// those it supports (the spec says: retry with a supported
		// version). Once.
		if attempt == 1 && errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeUnsupportedProtocolVersion {
			if r, ok := newestIn(supportedIn(rpcErr), accept); ok {
				c.rev = r
				continue
			}
		}
		break
	}
	c.rev = revision{}
	switch {
	case err == nil:
		if r, ok := newestIn(res.SupportedVersions, accept); ok {
			c.conn.negotiated(r)
			c.rev = r
			c.serverName.Store(&res.Meta.ServerInfo.Name)
			c.info = ServerInfo{
				ProtocolVersion: r.name,
				Implementation:  res.Meta.ServerInfo,
				Capabilities:    res.Capabilities,
				Instructions:    res.Instructions,
			}
			return true, revision{}, nil
		}
		fallback, _ = newestIn(res.SupportedVersions, handshakeEra)
		return false, fallback, nil
	case ctx.Err() != nil || errors.Is(err, ErrClosed) || notMCPEndpoint(err):
		return false, revision{}, err
	case errors.As(err, &rpcErr) && rpcErr.Code == jsonrpc.CodeUnsupportedProtocolVersion:
		fallback, _ = newestIn(supportedIn(rpcErr), handshakeEra)
		return false, fallback, nil
	default:
		c.logger.Debug("mcp: server/discover failed, trying the initialize handshake", "error", err)
		return false, revision{}, nil
	}
}

// notMCPEndpoint reports an error that initialize would meet too, and
// that says more than a failed probe: the endpoint wants OAuth, or
// answered with something other than MCP (a web page).
func notMCPEndpoint(err error) bool {
	var he *HTTPError
	return errors.As(err, new(*OAuthRequiredError)) || errors.As(err, &he) && he.StatusCode/100 == 2
}

// supportedIn reads the versions an UnsupportedProtocolVersion error lists.
func supportedIn(e *RPCError) []string {
	var data struct {
		Supported []string `json:"supported"`
	}
	_ = json.Unmarshal(e.Data, &data)
	return data.Supported
}

// initialize runs the handshake-era lifecycle: initialize, then
// notifications/initialized.
func (c *Client) initialize(ctx context.Context, rev revision) error {
	params := &initializeParams{ProtocolVersion: rev.name, Capabilities: c.caps, ClientInfo: c.opts.ClientInfo}
	var res struct {
		resultKind
		ProtocolVersion string          `json:"protocolVersion"`
		Capabilities    json.RawMessage `json:"capabilities"`
		ServerInfo      Implementation  `json:"serverInfo"`
		Instructions    string          `json:"instructions"`
	}
	// The handshake is bounded by the connect budget in ctx, not by
	// RequestTimeout (request knows: handshake is true).
	if err := c.request(ctx, "initialize", params, nil, true, &res); err != nil {
		return &ConnectError{Leg: LegInitialize, Err: err}
	}
	chosen, ok := lookupRevision(res.ProtocolVersion)
	switch {
	case !ok || !handshakeEra(chosen):
		return &ConnectError{Leg: LegInitialize, Err: fmt.Errorf("%w: server answered initialize with revision %q", ErrUnsupportedVersion, res.ProtocolVersion)}
	case c.opts.ProtocolVersion != "" && res.ProtocolVersion != c.opts.ProtocolVersion:
		return &ConnectError{Leg: LegInitialize, Err: fmt.Errorf("%w: pinned %s, server chose %s", ErrUnsupportedVersion, c.opts.ProtocolVersion, res.ProtocolVersion)}
	}
	c.conn.negotiated(chosen)
	c.rev = chosen
	c.serverName.Store(&res.ServerInfo.Name)
	c.info = ServerInfo{
		ProtocolVersion: res.ProtocolVersion,
		Implementation:  res.ServerInfo,
		Capabilities:    res.Capabilities,
		Instructions:    res.Instructions,
	}
	// Over HTTP this is a POST of its own, which a server can stall as
	// well as any request: it runs under the same budget.
	if err := c.conn.send(ctx, &jsonrpc.Message{Method: LegInitialized}); err != nil {
		if ctx.Err() != nil {
			err = interruption(LegInitialized, ctx)
		}
		return &ConnectError{Leg: LegInitialized, Err: err}
	}
	return nil
}
