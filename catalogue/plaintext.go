package catalogue

import (
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// A static header is sent as andon.yaml holds it, so a credential in one
// sits in the file in plain text, for anyone who can read the file (or a
// copy of it, a backup, a commit) to take. The vault is the place for it:
// encrypted at rest, sent only to the hosts named, only into a request on
// its way out. LogWarnings says so at start-up, naming the server and the
// header, never the value.

// credentialWords are the parts of a header name that say its value is a
// credential.
var credentialWords = []string{"auth", "token", "key", "secret", "password", "passwd", "session", "cookie", "credential"}

// credentialHeader reports whether a header looks like it carries a
// credential: by its name (Authorization, Cookie, X-Api-Key, anything
// with auth, token, key, secret …) or by its value (a "Bearer " or
// "Basic " credential).
func credentialHeader(name, value string) bool {
	value = strings.ToLower(strings.TrimSpace(value))
	if value == "" {
		return false
	}
	if strings.HasPrefix(value, "bearer ") || strings.HasPrefix(value, "basic ") {
		return true
	}
	name = strings.ToLower(name)
	for _, w := range credentialWords {
		if strings.Contains(name, w) {
			return true
		}
	}
	return false
}

// LogWarnings logs, at warn level, what in c is valid but unsafe: each
// header of a server whose value looks like a credential, written in the
// configuration in plain text. A warning names the server and the header,
// never the value, and says what to do instead (the vault: andon secret
// set, then credential: in the server's entry). path is the file c was
// read from, "" if none: when its group or others can read it, the
// warning says so and asks for chmod 600.
func (c *Config) LogWarnings(logger *slog.Logger, path string) {
	var perm fs.FileMode
	statted := false
	for i := range c.Servers {
		s := &c.Servers[i]
		credentials := 0
		for _, name := range sortedKeys(s.Headers) {
			if !credentialHeader(name, s.Headers[name]) {
				continue
			}
			credentials++
			attrs := []any{"server", s.Name, "header", http.CanonicalHeaderKey(name)}
			fix := s.vaultForm(name, credentials)
			if path != "" {
				if !statted {
					if info, err := os.Stat(path); err == nil {
						perm = info.Mode().Perm()
					}
					statted = true
				}
				attrs = append(attrs, "file", path)
				if perm&0o044 != 0 {
					attrs = append(attrs, "mode", fmt.Sprintf("%04o", perm), "readable_by", readers(perm))
					fix += "; and chmod 600 " + path
				}
			}
			logger.Warn("catalogue: a header's value looks like a credential, and the config holds it in plain text",
				append(attrs, "instead", fix)...)
		}
	}
}

// vaultForm says how the credential in s's header name moves to the vault:
// the andon secret set command and the credential: line that replace the
// header, or why it cannot (a server has one credential; the vault does not
// place cookies; OAuth has tokens of its own). nth counts the server's
// credential headers so far.
func (s *Server) vaultForm(name string, nth int) string {
	header := http.CanonicalHeaderKey(name)
	switch {
	case s.Auth == AuthOAuth:
		return "remove the header: with auth: oauth, andon sends the server the token the vault holds"
	case header == "Cookie":
		return "the vault does not place cookies: ask the server for a token (then andon secret set, and credential: in the server's entry), and keep the file private"
	case s.Credential != "" || nth > 1:
		return "a server has one credential: (the vault's, placed in one header); keep the file private"
	}
	placement, value := "header:"+header, "the header's value"
	if header == "Authorization" {
		v := strings.ToLower(strings.TrimSpace(s.Headers[name]))
		switch {
		case strings.HasPrefix(v, "bearer "):
			placement, value = "bearer", `the token after "Bearer "`
		case strings.HasPrefix(v, "basic "):
			placement, value = "basic", `user:password, the base64 after "Basic " decoded,`
		}
	}
	host := "HOST"
	if u, err := url.Parse(s.URL); err == nil && u.Hostname() != "" {
		host = strings.ToLower(u.Hostname())
	}
	secret := strings.TrimLeft(s.Name+"-"+strings.Map(secretNameRune, strings.ToLower(header)), "-_.")
	return fmt.Sprintf("andon secret set %s --placement %s --host %s (%s on standard input), then credential: %s in the server's entry, in place of the header",
		secret, placement, host, value, secret)
}

// secretNameRune keeps r in a vault secret's name, or makes it '-'.
func secretNameRune(r rune) rune {
	if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
		return r
	}
	return '-'
}

// readers says who besides its owner may read a file of mode perm, which
// its group or others may.
func readers(perm fs.FileMode) string {
	switch {
	case perm&0o044 == 0o044:
		return "group and others"
	case perm&0o040 != 0:
		return "group"
	}
	return "others"
}
