package openai

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"unicode/utf8"
)

// APIError is the provider's answer when it is not a 2xx: the HTTP status
// and what the provider's error object said. It holds no header value, and
// no message for 401 and 403.
type APIError struct {
	// StatusCode is the HTTP status.
	StatusCode int
	// Type, Code and Param are the error object's fields, when the
	// provider sent one ("invalid_request_error", "model_not_found", …).
	Type, Code, Param string
	// Message is the provider's message, cut to maxMessage bytes, with
	// anything that looks like a key redacted. Empty for 401 and 403.
	Message string
}

// maxMessage caps the provider's message kept in an [APIError].
const maxMessage = 500

// Error says what the provider answered and, for a refused credential,
// what to check; the message is already cut and redacted.
func (e *APIError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "openai: the provider answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.StatusCode == http.StatusUnauthorized || e.StatusCode == http.StatusForbidden {
		b.WriteString(": it refused the credential; check the API key's secret and its hosts")
	}
	var ids []string
	for _, s := range []string{e.Type, e.Code} {
		if s != "" {
			ids = append(ids, s)
		}
	}
	if e.Param != "" {
		ids = append(ids, "param "+e.Param)
	}
	if len(ids) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(ids, ", "))
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// keyLike matches what providers and proxies echo of a credential.
var keyLike = regexp.MustCompile(`(?i)\bbearer\s+\S+|\bsk-[A-Za-z0-9_*.\-]+`)

// redact removes what looks like a key from s, and cuts it short.
func (m *Model) redact(s string) string {
	if m.cfg.APIKey != "" {
		s = strings.ReplaceAll(s, m.cfg.APIKey, "[redacted]")
	}
	s = keyLike.ReplaceAllString(s, "[redacted]")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxMessage {
		cut := maxMessage
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}
