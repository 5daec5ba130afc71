package api

import (
	"context"
	"crypto/subtle"
	"errors"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/token"
)

// Connect is the console's Connect: the OAuth login of a server with auth:
// oauth, run in the operator's browser with the API itself as the redirect
// URI. With Config.Connect set, the handler serves:
//
//	POST /v1/servers/{name}/connect   admin   → {"authorize_url": "…"}
//	GET  /callback                    anyone  the authorization server's redirect
//
// The console sends the browser to authorize_url; the authorization server
// sends it back to http://127.0.0.1:PORT/callback (a loopback redirect URI
// of a native client, as `andon auth login`'s, so that one registration
// serves both), where the flow ends — the token stored in the vault, the
// server's tools imported again — and the browser is sent on to the
// console's servers page (/?connected=NAME#/servers, or connect_error=
// NAME). /callback needs no token, since a browser following a redirect
// carries none: it acts only on a pending flow's unguessable state, once.
type Connect struct {
	// Setup is what each server's OAuth client is built from: the egress
	// every request goes through and the vault. Its Authorize and
	// RedirectURL are the API's own.
	Setup catalogue.OAuthSetup
	// Server returns the configuration of the server called name.
	Server func(name string) (catalogue.Server, error)
	// Timeout bounds one flow, from Connect to the callback. Zero means
	// DefaultConnectTimeout.
	Timeout time.Duration
}

// DefaultConnectTimeout bounds a Connect flow that the operator does not
// finish in the browser.
const DefaultConnectTimeout = 10 * time.Minute

// callbackWait bounds the end of a flow after the callback: the code
// exchange and the import of the server's tools.
const callbackWait = 2 * time.Minute

// connects holds the flows under way, by state.
type connects struct {
	mu      sync.Mutex
	pending map[string]*connectFlow
}

// connectFlow is one login under way.
type connectFlow struct {
	server string
	state  string
	got    chan url.Values // the redirect's query, once
	done   chan error      // the login's end, once
}

func (s *server) connectRoutes(mux *http.ServeMux) {
	if s.cfg.Connect == nil {
		return
	}
	s.route(mux, "POST /v1/servers/{name}/connect", token.RoleAdmin, s.connectServer)
	s.route(mux, "GET /callback", anyone, s.connectCallback)
}

func (s *server) connectServer(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	srv, err := s.cfg.Connect.Server(name)
	if err != nil {
		s.toolFail(w, err)
		return
	}
	if srv.Auth != catalogue.AuthOAuth {
		writeError(w, http.StatusConflict, "conflict", "the server does not have auth: oauth in the configuration")
		return
	}
	redirect, ok := loopbackCallback(r.Host)
	if !ok {
		writeError(w, http.StatusBadRequest, "bad_request", "Connect works on a console reached at a loopback address (127.0.0.1:PORT)")
		return
	}
	timeout := s.cfg.Connect.Timeout
	if timeout <= 0 {
		timeout = DefaultConnectTimeout
	}
	// The flow outlives this request: it ends at the callback.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), timeout)
	f := &connectFlow{server: name, got: make(chan url.Values, 1), done: make(chan error, 1)}
	authURLs := make(chan string, 1)
	setup := s.cfg.Connect.Setup
	setup.RedirectURL = redirect
	setup.Authorize = func(ctx context.Context, authURL string) (url.Values, error) {
		authURLs <- authURL
		select {
		case q := <-f.got:
			return q, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	}
	tr, err := catalogue.NewOAuthTransport(ctx, srv, &setup)
	if err != nil {
		cancel()
		s.fail(w, err)
		return
	}
	go func() {
		defer cancel()
		_, err := tr.Login(ctx, srv.URL)
		f.done <- err
		s.dropFlow(f)
	}()
	select {
	case authURL := <-authURLs:
		u, _ := url.Parse(authURL)
		f.state = u.Query().Get("state")
		if f.state == "" {
			cancel()
			writeError(w, http.StatusBadGateway, "bad_gateway", "the OAuth client made an authorization URL without a state")
			return
		}
		s.connects.mu.Lock()
		if s.connects.pending == nil {
			s.connects.pending = map[string]*connectFlow{}
		}
		s.connects.pending[f.state] = f
		s.connects.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]string{"authorize_url": authURL})
	case err := <-f.done:
		// No authorization needed (client credentials), or it failed
		// before it could be asked for.
		if err != nil {
			s.cfg.Logger.Warn("api: connect failed", "server", name, "error", err)
			writeError(w, http.StatusBadGateway, "bad_gateway", "connecting to server "+name+" failed: "+err.Error())
			return
		}
		s.importAfterConnect(r.Context(), name)
		writeJSON(w, http.StatusOK, map[string]string{"connected": name})
	case <-r.Context().Done():
		cancel()
	}
}

// dropFlow forgets f once its login has ended.
func (s *server) dropFlow(f *connectFlow) {
	s.connects.mu.Lock()
	defer s.connects.mu.Unlock()
	if s.connects.pending[f.state] == f {
		delete(s.connects.pending, f.state)
	}
}

// take removes and returns the flow whose state is state.
func (c *connects) take(state string) *connectFlow {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, f := range c.pending {
		if subtle.ConstantTimeCompare([]byte(k), []byte(state)) == 1 {
			delete(c.pending, k)
			return f
		}
	}
	return nil
}

func (s *server) connectCallback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	f := s.connects.take(q.Get("state"))
	if f == nil {
		writeError(w, http.StatusBadRequest, "bad_request", "no login under way has this state (it ended, or was never started here)")
		return
	}
	f.got <- q
	var err error
	select {
	case err = <-f.done:
	case <-time.After(callbackWait):
		err = errors.New("the login did not end in time")
	}
	target := "/?connected=" + url.QueryEscape(f.server) + "#/servers"
	if err != nil {
		s.cfg.Logger.Warn("api: connect failed", "server", f.server, "error", err)
		target = "/?connect_error=" + url.QueryEscape(f.server) + "#/servers"
	} else {
		s.importAfterConnect(r.Context(), f.server)
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// importAfterConnect lists the server's tools again, so that the servers
// page shows it connected. A failure is the page's to show.
func (s *server) importAfterConnect(ctx context.Context, name string) {
	if s.cfg.Catalogue == nil {
		return
	}
	if _, err := s.cfg.Catalogue.Import(ctx, name); err != nil {
		s.cfg.Logger.Warn("api: importing after connect", "server", name, "error", err)
	}
}

// loopbackCallback is the redirect URI for a console reached at host: on
// 127.0.0.1 and the same port, the path a native client's loopback
// redirect has.
func loopbackCallback(host string) (string, bool) {
	h, port, err := net.SplitHostPort(host)
	if err != nil || port == "" {
		return "", false
	}
	switch h {
	case "127.0.0.1", "localhost", "::1":
	default:
		return "", false
	}
	return "http://127.0.0.1:" + port + "/callback", true
}
