// Package wwwauth reads the challenges of WWW-Authenticate headers (RFC
// 9110 §11.6.1), for the mcp client's errors and the OAuth client's
// discovery.
package wwwauth

import (
	"net/http"
	"strings"
)

// Challenge is one challenge of a WWW-Authenticate value.
type Challenge struct {
	Scheme string
	Params map[string]string // by lower-cased name
}

// Bearer returns the parameters of the first Bearer challenge among the
// WWW-Authenticate headers of h; ok is false when there is none.
func Bearer(h http.Header) (params map[string]string, ok bool) {
	for _, v := range h.Values("WWW-Authenticate") {
		for _, ch := range Parse(v) {
			if strings.EqualFold(ch.Scheme, "Bearer") {
				return ch.Params, true
			}
		}
	}
	return nil, false
}

// Parse parses a WWW-Authenticate value (RFC 9110 §11.6.1): challenges
// separated by commas, each a scheme followed by auth-params (name=token
// or name="quoted string"). A token68 is skipped.
func Parse(v string) []Challenge {
	var out []Challenge
	s := v
	for {
		s = strings.TrimLeft(s, " \t,")
		if s == "" {
			return out
		}
		scheme, rest := readToken(s)
		if scheme == "" {
			return out
		}
		ch := Challenge{Scheme: scheme, Params: map[string]string{}}
		s = rest
		for {
			t := strings.TrimLeft(s, " \t")
			name, after := readToken(t)
			after = strings.TrimLeft(after, " \t")
			if name == "" || !strings.HasPrefix(after, "=") {
				// Not an auth-param: the next challenge's scheme, or a
				// token68, which the outer loop reads as a scheme
				// without parameters.
				s = t
				break
			}
			after = strings.TrimLeft(after[1:], " \t")
			var val string
			if strings.HasPrefix(after, `"`) {
				val, after = readQuoted(after)
			} else {
				val, after = readToken(after)
			}
			ch.Params[strings.ToLower(name)] = val
			after = strings.TrimLeft(after, " \t")
			if !strings.HasPrefix(after, ",") {
				s = after
				break
			}
			s = after[1:]
		}
		out = append(out, ch)
	}
}

// readToken reads an RFC 9110 token from the start of s.
func readToken(s string) (tok, rest string) {
	i := 0
	for i < len(s) && isTokenChar(s[i]) {
		i++
	}
	return s[:i], s[i:]
}

func isTokenChar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// readQuoted reads a quoted string (with backslash escapes) from the start
// of s, which begins with a double quote.
func readQuoted(s string) (val, rest string) {
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case '"':
			return b.String(), s[i+1:]
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), ""
}
