package oauth

import (
	"net/http"
	"strings"
)

// challenge is the Bearer challenge of a WWW-Authenticate header (RFC 6750
// §3, RFC 9728 §5.1).
type challenge struct {
	// ResourceMetadata is the resource_metadata URL, if given.
	ResourceMetadata string
	// Scopes are the scope parameter's scopes, if given.
	Scopes []string
	// Error is the error parameter, such as invalid_token or
	// insufficient_scope.
	Error string
}

// parseChallenge reads the Bearer challenge among the WWW-Authenticate
// headers of h. ok is false when there is none.
func parseChallenge(h http.Header) (c challenge, ok bool) {
	for _, v := range h.Values("WWW-Authenticate") {
		for _, ch := range splitChallenges(v) {
			if !strings.EqualFold(ch.scheme, "Bearer") {
				continue
			}
			c.ResourceMetadata = ch.params["resource_metadata"]
			c.Scopes = strings.Fields(ch.params["scope"])
			c.Error = ch.params["error"]
			return c, true
		}
	}
	return challenge{}, false
}

// rawChallenge is one challenge of a WWW-Authenticate value.
type rawChallenge struct {
	scheme string
	params map[string]string // lower-cased names
}

// splitChallenges parses a WWW-Authenticate value (RFC 9110 §11.6.1):
// challenges separated by commas, each a scheme followed by auth-params
// (name=token or name="quoted string"). A token68 is skipped.
func splitChallenges(v string) []rawChallenge {
	var out []rawChallenge
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
		ch := rawChallenge{scheme: scheme, params: map[string]string{}}
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
			ch.params[strings.ToLower(name)] = val
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
