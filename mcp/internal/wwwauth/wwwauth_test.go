package wwwauth

import (
	"net/http"
	"testing"
)

func TestBearer(t *testing.T) {
	h := http.Header{}
	h.Add("WWW-Authenticate", `Basic realm="a, b", Negotiate abc==`)
	h.Add("WWW-Authenticate", `bearer resource_metadata="https://rs.example/.well-known/oauth-protected-resource?x=\"1\"", scope="files:read", error=invalid_token`)
	p, ok := Bearer(h)
	if !ok {
		t.Fatal("no Bearer challenge found")
	}
	want := map[string]string{"resource_metadata": `https://rs.example/.well-known/oauth-protected-resource?x="1"`, "scope": "files:read", "error": "invalid_token"}
	for k, v := range want {
		if p[k] != v {
			t.Errorf("%s = %q, want %q", k, p[k], v)
		}
	}
	if _, ok := Bearer(http.Header{"Www-Authenticate": {`Basic realm="x"`}}); ok {
		t.Error("a Basic challenge read as Bearer")
	}
}
