package api

import (
	"bytes"
	"embed"
	"net/http"
	"path"
	"time"
)

// The operator console: plain HTML, CSS and JavaScript embedded in the
// binary, so a fresh clone needs no build step. The page holds no data of
// its own and no credential: everything it shows it fetches from the JSON
// API, with the token the operator typed (kept in the tab's session
// storage), so serving the assets needs no authentication.
//
//go:embed console/index.html console/console.css console/console.js
var consoleFS embed.FS

// consoleCSP forbids everything but the console's own files: no inline
// script or style, no other origin, no framing.
const consoleCSP = "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// consoleTypes are the content types of the console's files.
var consoleTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
}

// consoleRoutes registers the console.
func (s *server) consoleRoutes(mux *http.ServeMux) {
	// Open to anyone: static files only; the data behind them is not.
	s.route(mux, "GET /{$}", anyone, serveConsoleFile("index.html"))
	s.route(mux, "GET /console/{file}", anyone, func(w http.ResponseWriter, r *http.Request) {
		serveConsoleFile(r.PathValue("file"))(w, r)
	})
}

func serveConsoleFile(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		data, err := consoleFS.ReadFile("console/" + name)
		ctype := consoleTypes[path.Ext(name)]
		if err != nil || ctype == "" {
			writeError(w, http.StatusNotFound, "not_found", "no such file")
			return
		}
		h := w.Header()
		h.Set("Content-Type", ctype)
		h.Set("Content-Security-Policy", consoleCSP)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	}
}
