package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/mcp/oauth"
)

// refreshes counts the refresh grants the authorization server received.
func refreshes(as *authServer) int {
	n := 0
	for _, tr := range as.tokens() {
		if tr.Grant == "refresh_token" {
			n++
		}
	}
	return n
}

// until waits, without a deadline of its own (the test's is the bound),
// for cond to hold.
func until(cond func() bool) {
	for !cond() {
		time.Sleep(time.Millisecond)
	}
}

// nearExpiry moves tr's clock to 10 seconds before its tokens (which live
// an hour) expire.
func nearExpiry(tr *oauth.Transport) {
	at := time.Now().Add(time.Hour - 10*time.Second)
	tr.SetClock(func() time.Time { return at })
}

// TestRefreshBeforeExpiry: a token about to expire is refreshed before the
// request goes out, with the resource parameter; the server never sees
// the expiring token again.
func TestRefreshBeforeExpiry(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	tr := newTransport()
	if _, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil {
		t.Fatal(err)
	}
	nearExpiry(tr)
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("second request: %d, %v", status, err)
	}
	toks := as.tokens()
	if len(toks) != 2 || toks[1].Grant != "refresh_token" {
		t.Fatalf("token requests = %+v, want authorization_code then refresh_token", toks)
	}
	f := toks[1].Form
	if f.Get("resource") != rs.mcpURL() || !strings.HasPrefix(f.Get("refresh_token"), "rt-") {
		t.Errorf("refresh form = %v, want resource and refresh_token", f)
	}
	_, auths := rs.seen()
	if len(auths) != 3 || auths[2] == auths[1] {
		t.Errorf("Authorization headers = %q: want the refreshed token on the third request, no 401 between", auths)
	}
}

// TestRefreshOn401: a token the server rejects is refreshed and the
// request retried; the user is not asked again.
func TestRefreshOn401(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	tr := newTransport()
	if _, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil {
		t.Fatal(err)
	}
	as.revoke()
	if status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil || status != http.StatusOK {
		t.Fatalf("after revocation: %d, %v", status, err)
	}
	if refreshes(as) != 1 || len(as.auths()) != 1 {
		t.Errorf("%d refreshes and %d authorizations, want 1 and 1", refreshes(as), len(as.auths()))
	}
}

// TestSingleFlightRefresh: ten concurrent requests that find the token
// about to expire share one refresh.
func TestSingleFlightRefresh(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	tr := newTransport()
	if _, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil {
		t.Fatal(err)
	}
	nearExpiry(tr)
	gate := make(chan struct{})
	as.mu.Lock()
	as.tokenGate = gate
	as.mu.Unlock()

	const n = 10
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`)
			if err == nil && status != http.StatusOK {
				err = errors.New(http.StatusText(status))
			}
			errs <- err
		})
	}
	// Hold the refresh until all ten wait on it (or a second refresh
	// shows there is no sharing).
	until(func() bool { return tr.Waiters(rs.mcpURL()) == n || refreshes(as) > 1 })
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	if got := refreshes(as); got != 1 {
		t.Errorf("refreshes = %d, want 1 shared by %d requests", got, n)
	}
}

// TestCancelledCallerLeavesSharedRefresh: a caller cancelled while it
// waits on a refresh others share returns at once; the refresh goes on
// for the others.
func TestCancelledCallerLeavesSharedRefresh(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	tr := newTransport()
	if _, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil {
		t.Fatal(err)
	}
	nearExpiry(tr)
	gate := make(chan struct{})
	as.mu.Lock()
	as.tokenGate = gate
	as.mu.Unlock()

	// A starts the shared refresh; B joins it.
	ctxA, cancelA := context.WithCancel(context.Background())
	defer cancelA()
	errA, errB := make(chan error, 1), make(chan error, 1)
	go func() { _, _, err := post(t, ctxA, tr, rs.mcpURL(), `{}`); errA <- err }()
	until(func() bool { return tr.Waiters(rs.mcpURL()) == 1 })
	go func() {
		status, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`)
		if err == nil && status != http.StatusOK {
			err = errors.New(http.StatusText(status))
		}
		errB <- err
	}()
	until(func() bool { return tr.Waiters(rs.mcpURL()) == 2 })
	cancelA()
	if err := <-errA; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled caller: err = %v, want context.Canceled", err)
	}
	close(gate)
	if err := <-errB; err != nil {
		t.Errorf("the caller still waiting: %v", err)
	}
	as.mu.Lock()
	abandoned := as.abandoned
	as.mu.Unlock()
	if abandoned != 0 || refreshes(as) != 1 {
		t.Errorf("abandoned %d, refreshes %d: want the one refresh to complete", abandoned, refreshes(as))
	}
}

// TestCancelAbandonsTokenRequest: when the only caller waiting on a
// refresh is cancelled, the token request is abandoned on the wire and
// the stored token is left as it was.
func TestCancelAbandonsTokenRequest(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	tr := newTransport()
	// Only the cancel, never this bound, may end the held request.
	tr.LegTimeout = time.Hour
	if _, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil {
		t.Fatal(err)
	}
	nearExpiry(tr)
	key := oauth.Key{Issuer: as.issuer(), Resource: rs.mcpURL()}
	before, err := tr.Store.Token(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	defer close(gate)
	as.mu.Lock()
	as.tokenGate = gate
	as.mu.Unlock()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, _, err := post(t, ctx, tr, rs.mcpURL(), `{}`); done <- err }()
	until(func() bool { return refreshes(as) == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	until(func() bool {
		as.mu.Lock()
		defer as.mu.Unlock()
		return as.abandoned == 1
	})
	after, err := tr.Store.Token(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if after.AccessToken != before.AccessToken || after.RefreshToken != before.RefreshToken {
		t.Errorf("the stored token changed after an abandoned refresh")
	}
}

// countingBase is a Base that counts the requests handed to it and
// checks nothing itself (as a caller's egress transport might not).
type countingBase struct{ n atomic.Int32 }

func (c *countingBase) RoundTrip(req *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(req)
}

// TestCancelledSendsNothing: a request whose context is already done is
// not handed to Base at all, even a Base that would not check the context
// itself: no credential goes out for a run already cancelled.
func TestCancelledSendsNothing(t *testing.T) {
	as := newAuthServer(t)
	rs := newResourceServer(t, as)
	base := &countingBase{}
	tr := newTransport()
	tr.Base = base
	if _, _, err := post(t, context.Background(), tr, rs.mcpURL(), `{}`); err != nil {
		t.Fatal(err)
	}
	before := base.n.Load()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rs.mcpURL(), strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tr.RoundTrip(req); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n := base.n.Load() - before; n != 0 {
		t.Errorf("%d requests went to Base after the cancel, want none", n)
	}
}
