package agent

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An answer that does not fit the requested schema is refused with an error
// that names the field and the keyword that failed — never the value, which
// may be a secret; and the server's schema can make andon read no file.
func TestValidateAnswer(t *testing.T) {
	secretFile := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(secretFile, []byte(`{"type":"string","const":"from-a-file"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	schema := `{"type":"object","properties":{
		"token":{"type":"string","pattern":"^[0-9]+$","format":"password"},
		"email":{"type":"string","format":"email"},
		"env":{"type":"string","enum":["staging","production"]},
		"n":{"type":"integer","minimum":1}},
		"required":["token"]}`
	for _, c := range []struct {
		name, content, wantField string
	}{
		{"pattern", `{"token":"hunter2-secret"}`, "field /token fails \"pattern\""},
		{"format", `{"token":"1","email":"hunter2-secret"}`, "field /email fails \"format\""},
		{"enum", `{"token":"1","env":"hunter2-secret"}`, "field /env fails \"enum\""},
		{"type", `{"token":"1","n":"hunter2-secret"}`, "field /n fails \"type\""},
		{"required", `{"email":"a@example.com"}`, "field / fails \"required\""},
	} {
		err := validateAnswer(json.RawMessage(schema), json.RawMessage(c.content))
		if !errors.Is(err, ErrInvalidAnswer) || !strings.Contains(err.Error(), c.wantField) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%s: %v; want ErrInvalidAnswer saying %q, without the value", c.name, err, c.wantField)
		}
	}
	if err := validateAnswer(json.RawMessage(schema), json.RawMessage(`{"token":"42","env":"staging","n":3}`)); err != nil {
		t.Errorf("a fitting answer: %v", err)
	}
	for _, bad := range []string{`[]`, `"x"`, ``, `{`} {
		if err := validateAnswer(json.RawMessage(schema), json.RawMessage(bad)); !errors.Is(err, ErrInvalidAnswer) {
			t.Errorf("answer %q: %v, want ErrInvalidAnswer", bad, err)
		}
	}
	ref := `{"type":"object","properties":{"x":{"$ref":"file://` + secretFile + `"}}}`
	if err := validateAnswer(json.RawMessage(ref), json.RawMessage(`{"x":"from-a-file"}`)); !errors.Is(err, ErrInvalidAnswer) {
		t.Errorf("a schema that refers to a local file: %v; want it refused (nothing is loaded)", err)
	}
}
