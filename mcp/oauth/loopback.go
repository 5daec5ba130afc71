package oauth

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
)

// LoopbackRedirect receives one authorization response on a loopback
// redirect URI (RFC 8252 §7.3), for a command-line login: set
// ClientConfig.RedirectURL to its URL, and have Transport.Authorize open
// the authorization URL and return Wait's result.
type LoopbackRedirect struct {
	// URL is the redirect URI: http://127.0.0.1:PORT/callback.
	URL string

	srv   *http.Server
	got   chan url.Values
	taken atomic.Bool // the first response has arrived
	once  sync.Once
	done  chan struct{} // closed by Close
}

// callbackPath is the redirect URI's path.
const callbackPath = "/callback"

// NewLoopbackRedirect listens on a free port of 127.0.0.1. Close it when
// the login is over.
func NewLoopbackRedirect(ctx context.Context) (*LoopbackRedirect, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("oauth: loopback redirect: %w", err)
	}
	l := &LoopbackRedirect{
		URL:  "http://" + ln.Addr().String() + callbackPath,
		got:  make(chan url.Values, 1),
		done: make(chan struct{}),
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+callbackPath, l.serve)
	l.srv = &http.Server{Handler: mux}
	go l.srv.Serve(ln)
	return l, nil
}

// serve takes the first authorization response; later ones are refused.
func (l *LoopbackRedirect) serve(w http.ResponseWriter, r *http.Request) {
	if !l.taken.CompareAndSwap(false, true) {
		http.Error(w, "this login is already complete", http.StatusConflict)
		return
	}
	l.got <- r.URL.Query() // buffered for the one response
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if r.URL.Query().Get("error") != "" {
		fmt.Fprint(w, "<!doctype html><title>Authorization failed</title><p>Authorization failed. You can close this window.</p>")
		return
	}
	fmt.Fprint(w, "<!doctype html><title>Authorized</title><p>Authorized. You can close this window.</p>")
}

// Wait returns the query parameters of the authorization response, once
// the browser has been redirected to URL.
func (l *LoopbackRedirect) Wait(ctx context.Context) (url.Values, error) {
	select {
	case v := <-l.got:
		return v, nil
	case <-l.done:
		return nil, errors.New("oauth: loopback redirect closed")
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Close stops listening.
func (l *LoopbackRedirect) Close() error {
	var err error
	l.once.Do(func() {
		close(l.done)
		err = l.srv.Close()
	})
	return err
}
