package catalogue_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/andonhq/andon/catalogue"
)

// warnings returns what LogWarnings logs of cfg: the records, and the log
// as it was written.
func warnings(t *testing.T, cfg *catalogue.Config, path string) (records []map[string]any, raw string) {
	t.Helper()
	var buf bytes.Buffer
	cfg.LogWarnings(slog.New(slog.NewJSONHandler(&buf, nil)), path)
	dec := json.NewDecoder(bytes.NewReader(buf.Bytes()))
	for dec.More() {
		var r map[string]any
		if err := dec.Decode(&r); err != nil {
			t.Fatalf("the log is not JSON lines: %v\n%s", err, buf.String())
		}
		records = append(records, r)
	}
	return records, buf.String()
}

// loadWarnings writes config to a file of mode perm, loads it, and returns
// what LogWarnings logs, and the file's path.
func loadWarnings(t *testing.T, config string, perm os.FileMode) (path string, records []map[string]any, raw string) {
	t.Helper()
	path = filepath.Join(t.TempDir(), "andon.yaml")
	if err := os.WriteFile(path, []byte(config), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil { // whatever the umask
		t.Fatal(err)
	}
	cfg, err := catalogue.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	records, raw = warnings(t, cfg, path)
	return path, records, raw
}

// httpServer is a config of one HTTP server, tickets, with one header.
func httpServer(header, value, extra string) string {
	return fmt.Sprintf("servers:\n  - name: tickets\n    url: https://Tickets.example.com:8443/mcp\n    headers: {%q: %q}\n%s", header, value, extra)
}

// A header that looks like a credential is warned of at load: the warning
// names the server and the header, never the value, and says what to run
// instead — the vault's form for that header, literally. A header that does
// not look like one is not warned of.
func TestLogWarningsLiteralCredential(t *testing.T) {
	t.Parallel()
	const value = "s3cr3t-v4lue-9f2c"
	tests := []struct {
		header, value, extra string
		want                 string // in the warning's advice; "" for no warning
	}{
		{"Authorization", "Bearer " + value, "", "andon secret set tickets-authorization --placement bearer --host tickets.example.com " +
			`(the token after "Bearer " on standard input), then credential: tickets-authorization in the server's entry, in place of the header`},
		{"authorization", "basic " + value, "", "--placement basic --host tickets.example.com (user:password"},
		{"Authorization", "Token " + value, "", "--placement header:Authorization --host tickets.example.com (the header's value"},
		{"X-Api-Key", value, "", "andon secret set tickets-x-api-key --placement header:X-Api-Key --host tickets.example.com"},
		{"X-Auth-Token", value, "", "--placement header:X-Auth-Token"},
		{"Proxy-Authorization", value, "", "--placement header:Proxy-Authorization"},
		{"X-Client-Secret", value, "", "--placement header:X-Client-Secret"},
		{"X-Custom", "Bearer " + value, "", "--placement header:X-Custom"}, // bearer would put it in Authorization
		{"Cookie", "sid=" + value, "", "the vault does not place cookies"},
		{"Authorization", "Bearer " + value, "    credential: other\n", "a server has one credential"},
		{"Authorization", "Bearer " + value, "    auth: oauth\n", "remove the header: with auth: oauth"},
		{"X-Api-Version", "2", "", ""},
		{"Accept-Language", "en", "", ""},
		{"X-Request-Source", "andon", "", ""},
		{"X-Api-Key", " ", "", ""}, // nothing there
	}
	for _, tt := range tests {
		_, records, raw := loadWarnings(t, httpServer(tt.header, tt.value, tt.extra), 0o600)
		if strings.Contains(raw, strings.TrimSpace(value)) {
			t.Errorf("%s: the warning holds the value: %s", tt.header, raw)
		}
		if tt.want == "" {
			if len(records) != 0 {
				t.Errorf("%s: %q is no credential, but: %s", tt.header, tt.value, raw)
			}
			continue
		}
		if len(records) != 1 {
			t.Errorf("%s: %d warnings, want 1: %s", tt.header, len(records), raw)
			continue
		}
		r := records[0]
		if r["level"] != "WARN" || r["server"] != "tickets" || !strings.EqualFold(fmt.Sprint(r["header"]), tt.header) ||
			!strings.Contains(fmt.Sprint(r["msg"]), "plain text") || !strings.Contains(fmt.Sprint(r["instead"]), tt.want) {
			t.Errorf("%s: the warning is %v; want it to name server tickets and the header, and advise %q", tt.header, r, tt.want)
		}
		if strings.Contains(raw, "chmod") || r["readable_by"] != nil {
			t.Errorf("%s: a file of mode 0600 is private, but: %s", tt.header, raw)
		}
	}
}

// A config that holds a credential and that others can read says so, and
// asks for chmod 600; a private one, or one without credentials, does not.
func TestLogWarningsReadableFile(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		perm os.FileMode
		who  string
	}{{0o644, "group and others"}, {0o640, "group"}, {0o604, "others"}} {
		path, records, raw := loadWarnings(t, httpServer("Authorization", "Bearer abc123456", ""), tt.perm)
		if len(records) != 1 || records[0]["mode"] != fmt.Sprintf("%04o", tt.perm) || records[0]["readable_by"] != tt.who ||
			records[0]["file"] != path || !strings.HasSuffix(fmt.Sprint(records[0]["instead"]), "; and chmod 600 "+path) {
			t.Errorf("mode %04o: the warning is %s; want the mode, who can read it, and chmod 600", tt.perm, raw)
		}
	}
	if _, _, raw := loadWarnings(t, httpServer("X-Api-Version", "2", ""), 0o644); raw != "" {
		t.Errorf("a readable config without credentials: %s", raw)
	}
	// Parsed from bytes there is no file to speak of.
	cfg, err := catalogue.Parse([]byte(httpServer("Authorization", "Bearer abc123456", "")))
	if err != nil {
		t.Fatal(err)
	}
	if records, raw := warnings(t, cfg, ""); len(records) != 1 || records[0]["file"] != nil || strings.Contains(raw, "chmod") {
		t.Errorf("a parsed config: %s", raw)
	}
}
