package catalogue_test

import (
	"context"
	"strings"
	"testing"

	"github.com/andonhq/andon/catalogue"
)

// approval: other_person makes the server's tools four-eyes tools; a
// server without it leaves approval to anyone who may act on the run.
func TestApprovalOtherPersonIsFourEyes(t *testing.T) {
	cfg, err := catalogue.Parse([]byte("servers:\n  - {name: prod, command: [mcptest], approval: other_person}\n  - {name: dev, command: [mcptest]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, cfg.Servers, nil, nil)
	if _, err := f.cat.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	if prod := f.tool("mcp_prod_echo"); !prod.RequiresApproval() || !prod.FourEyes() {
		t.Errorf("a tool of a server with approval: other_person: approval %v, four eyes %v; want both", prod.RequiresApproval(), prod.FourEyes())
	}
	if dev := f.tool("mcp_dev_echo"); !dev.RequiresApproval() || dev.FourEyes() {
		t.Errorf("a tool of a server without it: approval %v, four eyes %v; want approval only", dev.RequiresApproval(), dev.FourEyes())
	}
}

func TestApprovalErrors(t *testing.T) {
	for _, c := range []struct{ yaml, want string }{
		{"servers:\n  - {name: x, command: [x], approval: others}\n", `approval "others" is not other_person`},
		{"servers:\n  - {name: x, command: [x], approval: other_person, requires_approval: false}\n", "requires_approval: false turns off"},
	} {
		if _, err := catalogue.Parse([]byte(c.yaml)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want an error saying %q", c.yaml, err, c.want)
		}
	}
}
