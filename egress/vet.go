package egress

import (
	"context"
	"errors"
	"net/http"
	"net/url"
)

// Vet runs the guards a request to u would meet — scheme guard, host
// allowlist, resolution and address vetting — without sending anything or
// reading a secret. It is for URLs that come from metadata a server
// supplied (an OAuth authorization server's endpoints, say), so that a
// refused one is refused before the code that would use it reads a secret
// for it. A refusal is a [*RefusedError] and is recorded as a refused
// http_call row (method "VET"); a URL that passes writes no row, since
// nothing was sent. A ctx already done returns its cause and writes no row;
// one that ends while the name resolves is recorded as a call cancelled
// before send, as a request's would be.
func (t *Transport) Vet(ctx context.Context, u *url.URL) error {
	if u == nil {
		return errors.New("egress: Vet with a nil URL")
	}
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	req := (&http.Request{Method: "VET", URL: u, Header: http.Header{}}).WithContext(ctx)
	c := t.begin(req)
	host, refused := t.check(req)
	if refused != nil {
		return c.refuse(refused)
	}
	_, err := t.addresses(c, host) // on failure it has written the row
	return err
}
