package vault

import (
	"fmt"
	"net/http"
	"strings"
)

// PlacementKind says where on a request a secret goes.
type PlacementKind string

// The placements a secret can have.
const (
	// Bearer sends "Authorization: Bearer VALUE".
	Bearer PlacementKind = "bearer"
	// Header sends the value in the header named by [Placement.Name].
	Header PlacementKind = "header"
	// Basic sends HTTP basic authentication; the value is "user:password".
	Basic PlacementKind = "basic"
	// Query sets the URL query parameter named by [Placement.Name]. Audit
	// rows and errors never include a query string, so the value cannot
	// leak through them.
	Query PlacementKind = "query"
)

// Placement is where a secret is put on an outgoing request.
type Placement struct {
	// Kind is one of [Bearer], [Header], [Basic] or [Query].
	Kind PlacementKind
	// Name is the header name for [Header] and the query parameter for
	// [Query]; it is empty for the others.
	Name string
}

// ParsePlacement parses the textual form used by the CLI and the store:
// "bearer", "basic", "header:NAME" or "query:NAME".
func ParsePlacement(s string) (Placement, error) {
	kind, name, _ := strings.Cut(s, ":")
	p := Placement{Kind: PlacementKind(kind), Name: name}
	if p.Kind == Header {
		p.Name = http.CanonicalHeaderKey(p.Name)
	}
	if err := p.validate(); err != nil {
		return Placement{}, err
	}
	return p, nil
}

// String returns the form [ParsePlacement] reads.
func (p Placement) String() string {
	if p.Name == "" {
		return string(p.Kind)
	}
	return string(p.Kind) + ":" + p.Name
}

func (p Placement) validate() error {
	switch p.Kind {
	case Bearer, Basic:
		if p.Name != "" {
			return fmt.Errorf("%w: placement %q takes no name", ErrInvalid, p.Kind)
		}
	case Header:
		if !isToken(p.Name) {
			return fmt.Errorf("%w: placement header needs a valid header name, as in header:X-API-Key", ErrInvalid)
		}
		switch http.CanonicalHeaderKey(p.Name) {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection", "Cookie":
			return fmt.Errorf("%w: header %q cannot carry a secret", ErrInvalid, p.Name)
		}
	case Query:
		if p.Name == "" {
			return fmt.Errorf("%w: placement query needs a parameter name, as in query:api_key", ErrInvalid)
		}
	default:
		return fmt.Errorf("%w: unknown placement %q (want bearer, basic, header:NAME or query:NAME)", ErrInvalid, p.Kind)
	}
	return nil
}

// checkValue refuses values that cannot be placed safely. The error never
// contains the value.
func (p Placement) checkValue(value []byte) error {
	if len(value) == 0 {
		return fmt.Errorf("%w: the value is empty", ErrInvalid)
	}
	if p.Kind == Query {
		return nil // query values are percent-encoded
	}
	for _, c := range value {
		if c < 0x20 || c == 0x7f {
			return fmt.Errorf("%w: the value contains a control character, which a header cannot carry", ErrInvalid)
		}
	}
	if p.Kind == Basic && !strings.Contains(string(value), ":") {
		return fmt.Errorf("%w: a basic-auth value must be user:password", ErrInvalid)
	}
	return nil
}

// put places value on req. req must be the caller's own copy.
func (p Placement) put(req *http.Request, value string) {
	switch p.Kind {
	case Bearer:
		req.Header.Set("Authorization", "Bearer "+value)
	case Header:
		req.Header.Set(p.Name, value)
	case Basic:
		user, pass, _ := strings.Cut(value, ":")
		req.SetBasicAuth(user, pass)
	case Query:
		q := req.URL.Query()
		q.Set(p.Name, value)
		req.URL.RawQuery = q.Encode()
	}
}

// isToken reports whether s is an RFC 9110 token, the syntax of a header name.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}
