package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"github.com/andonhq/andon/vault"
)

// pin is the vetted destination of one request, carried to the dialer in
// the request's context. The dialer never resolves a name.
type pin struct {
	host  string // normalised URL host name
	port  string
	addrs []netip.Addr
}

type pinKey struct{}

// DialFunc dials one vetted IP:port; see [Config.Dial].
type DialFunc func(ctx context.Context, network, address string) (net.Conn, error)

// dialPinned is the inner transport's DialContext. It dials only the
// addresses vetted for this request, in order, and refuses anything else.
func (t *Transport) dialPinned(ctx context.Context, network, address string) (net.Conn, error) {
	p, _ := ctx.Value(pinKey{}).(*pin)
	if p == nil {
		return nil, errors.New("egress: dial without vetted addresses refused")
	}
	host, port, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("egress: dial: %w", err)
	}
	if vault.NormalizeHost(host) != p.host || port != p.port {
		return nil, fmt.Errorf("egress: dial to %s does not match the vetted destination", address)
	}
	var errs []error
	for _, a := range p.addrs {
		conn, err := t.dial(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}
