package catalogue_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/sqlstore"
)

// patience bounds every wait. It only keeps a broken test from hanging; no
// test asserts how long anything took.
const patience = 10 * time.Second

// openStore opens a real SQLite store, closed at cleanup.
func openStore(t *testing.T, path string) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// failingStore is a settings store whose reads fail while fail is set.
type failingStore struct {
	catalogue.SettingsStore
	fail atomic.Bool
}

var errStoreDown = errors.New("the database is down")

func (s *failingStore) ToolSettingList(ctx context.Context) ([]catalogue.ToolSetting, error) {
	if s.fail.Load() {
		return nil, errStoreDown
	}
	return s.SettingsStore.ToolSettingList(ctx)
}

func listNames(t *testing.T, cat *catalogue.Catalogue) []string {
	t.Helper()
	tools, err := cat.List(context.Background())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var names []string
	for _, tool := range tools {
		names = append(names, tool.Spec().Name)
	}
	return names
}

func setTool(t *testing.T, cat *catalogue.Catalogue, name string, ch catalogue.ToolChange) catalogue.ToolInfo {
	t.Helper()
	info, err := cat.SetTool(context.Background(), name, ch, "alice")
	if err != nil {
		t.Fatalf("SetTool(%s): %v", name, err)
	}
	return info
}

// An operator disables a tool: it is no longer offered to the model, and a
// call to it fails, saying so, without reaching the server. Enabled again,
// it is back.
func TestDisabledToolIsNotOfferedAndItsCallFails(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "andon.db"))
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio, RequiresApproval: ptr(true)}}, nil,
		&catalogue.Options{Settings: st})
	if !slices.Contains(listNames(t, f.cat), "mcp_s_echo") {
		t.Fatal("echo is not offered before anyone disabled it")
	}
	info := setTool(t, f.cat, "mcp_s_echo", catalogue.ToolChange{Enabled: ptr(false)})
	if info.Enabled || info.Name != "mcp_s_echo" || info.Server != "s" || info.Tool != "echo" || info.UpdatedBy != "alice" || info.UpdatedAt.IsZero() {
		t.Errorf("SetTool returned %+v, want echo disabled by alice", info)
	}
	if names := listNames(t, f.cat); slices.Contains(names, "mcp_s_echo") || !slices.Contains(names, "mcp_s_slow") {
		t.Fatalf("after disabling echo, List offers %v", names)
	}

	echo := f.tool("mcp_s_echo")
	if echo.Enabled() || echo.RequiresApproval() || echo.Effect() != agent.EffectReadOnly {
		t.Errorf("disabled echo: enabled %v, approval %v, effect %s; want false, false (nothing to approve), read_only (nothing is sent)",
			echo.Enabled(), echo.RequiresApproval(), echo.Effect())
	}
	res, err := echo.Call(context.Background(), json.RawMessage(`{"text":"hi"}`))
	wantResult(t, res, err, agent.OutcomeFailed, `Tool "echo" of server "s" is disabled by an operator; it was not called.`)
	if calls := toolCalls(f.srv.Records(), "echo"); len(calls) != 0 {
		t.Errorf("the server received %d echo calls of a disabled tool", len(calls))
	}

	setTool(t, f.cat, "mcp_s_echo", catalogue.ToolChange{Enabled: ptr(true)})
	if !slices.Contains(listNames(t, f.cat), "mcp_s_echo") {
		t.Fatal("echo is not offered once enabled again")
	}
	res, err = f.call(context.Background(), "mcp_s_echo", `{"text":"back"}`)
	wantResult(t, res, err, agent.OutcomeOK, "back")
	if !f.tool("mcp_s_echo").RequiresApproval() {
		t.Error("enabled again, echo needs no approval; the server's requires_approval says it does")
	}
}

// An operator's effect and approval win over andon.yaml's and over trusted
// annotations; a tool handed out before the change keeps what it had (a
// call under way is not affected), the next lookup sees the change.
func TestOperatorEffectAndApprovalWin(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "andon.db"))
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio, TrustAnnotations: true, RequiresApproval: ptr(false),
		Effects: map[string]agent.Effect{"slow": agent.EffectReadOnly}}}, nil, &catalogue.Options{Settings: st})

	before := f.tool("mcp_s_slow")
	if before.Effect() != agent.EffectReadOnly || before.RequiresApproval() {
		t.Fatalf("slow from andon.yaml: %s, approval %v", before.Effect(), before.RequiresApproval())
	}
	info := setTool(t, f.cat, "mcp_s_slow", catalogue.ToolChange{Effect: agent.EffectNonIdempotentWrite})
	if info.Effect != agent.EffectNonIdempotentWrite || info.EffectSource != catalogue.SourceOperator || info.RequiresApproval {
		t.Errorf("SetTool returned %+v", info)
	}
	after := f.tool("mcp_s_slow")
	if after.Effect() != agent.EffectNonIdempotentWrite || after.Effect().IsWrite() != true || agent.MayRetry(after.Effect()) {
		t.Errorf("after the change, slow's effect is %s: the runtime would not fence it as a non-idempotent write", after.Effect())
	}
	if before.Effect() != agent.EffectReadOnly {
		t.Errorf("the tool handed out before the change now says %s: a call under way must keep its effect", before.Effect())
	}

	// A trusted annotation (echo: readOnlyHint) loses to the operator too.
	if f.tool("mcp_s_echo").Effect() != agent.EffectReadOnly {
		t.Fatal("echo's trusted readOnlyHint is not applied")
	}
	setTool(t, f.cat, "mcp_s_echo", catalogue.ToolChange{Effect: agent.EffectIdempotentWrite, RequiresApproval: ptr(true)})
	if echo := f.tool("mcp_s_echo"); echo.Effect() != agent.EffectIdempotentWrite || !echo.RequiresApproval() {
		t.Errorf("echo: %s, approval %v; want the operator's idempotent_write, true", echo.Effect(), echo.RequiresApproval())
	}
	// Changing one field keeps the others.
	setTool(t, f.cat, "mcp_s_echo", catalogue.ToolChange{Enabled: ptr(true)})
	if echo := f.tool("mcp_s_echo"); echo.Effect() != agent.EffectIdempotentWrite || !echo.RequiresApproval() {
		t.Errorf("after changing enabled only, echo: %s, approval %v", echo.Effect(), echo.RequiresApproval())
	}
}

// Every tool says where its effect comes from.
func TestToolsSayWhereTheEffectComesFrom(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "andon.db"))
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio, TrustAnnotations: true,
		Effects: map[string]agent.Effect{"slow": agent.EffectIdempotentWrite}}}, nil, &catalogue.Options{Settings: st})
	if _, err := f.cat.List(context.Background()); err != nil {
		t.Fatal(err)
	}
	setTool(t, f.cat, "mcp_s_fail", catalogue.ToolChange{Effect: agent.EffectReadOnly})
	infos, err := f.cat.Tools(context.Background(), "s")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		effect agent.Effect
		source catalogue.EffectSource
	}{
		"mcp_s_echo":  {agent.EffectReadOnly, catalogue.SourceAnnotation},
		"mcp_s_slow":  {agent.EffectIdempotentWrite, catalogue.SourceConfig},
		"mcp_s_fail":  {agent.EffectReadOnly, catalogue.SourceOperator},
		"mcp_s_crash": {agent.EffectNonIdempotentWrite, catalogue.SourceDefault},
	}
	seen := 0
	for _, info := range infos {
		if w, ok := want[info.Name]; ok {
			seen++
			if info.Effect != w.effect || info.EffectSource != w.source {
				t.Errorf("%s: %s from %s, want %s from %s", info.Name, info.Effect, info.EffectSource, w.effect, w.source)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("Tools listed %d of the %d tools checked", seen, len(want))
	}
}

// Two catalogues on one database stand for two processes (andon serve and
// a worker): a change made through one applies in the other, without a
// restart.
func TestAnotherCatalogueOnTheStoreAppliesAChange(t *testing.T) {
	path := filepath.Join(t.TempDir(), "andon.db")
	servers := []catalogue.Server{{Name: "s", Command: stdio, RequiresApproval: ptr(false)}}
	api := newFixture(t, servers, nil, &catalogue.Options{Settings: openStore(t, path)})
	worker := newFixture(t, servers, nil, &catalogue.Options{Settings: openStore(t, path), SettingsMaxAge: -1})
	// The default bound: applied within about a second.
	lazy := newFixture(t, servers, nil, &catalogue.Options{Settings: openStore(t, path)})
	for _, c := range []*catalogue.Catalogue{worker.cat, lazy.cat} {
		if !slices.Contains(listNames(t, c), "mcp_s_echo") {
			t.Fatal("echo is not offered at first")
		}
	}

	// The API process imports the server on an operator's request only.
	if _, err := api.cat.Import(context.Background(), "s"); err != nil {
		t.Fatal(err)
	}
	setTool(t, api.cat, "mcp_s_echo", catalogue.ToolChange{Enabled: ptr(false)})
	setTool(t, api.cat, "mcp_s_slow", catalogue.ToolChange{Effect: agent.EffectReadOnly, RequiresApproval: ptr(true)})

	// Reading on every lookup, the worker applies it at once.
	if slices.Contains(listNames(t, worker.cat), "mcp_s_echo") {
		t.Error("the worker still offers echo")
	}
	if slow := worker.tool("mcp_s_slow"); slow.Effect() != agent.EffectReadOnly || !slow.RequiresApproval() {
		t.Errorf("the worker's slow: %s, approval %v; want read_only, true", slow.Effect(), slow.RequiresApproval())
	}
	res, err := worker.call(context.Background(), "mcp_s_echo", `{"text":"hi"}`)
	wantResult(t, res, err, agent.OutcomeFailed, "disabled by an operator")

	// With the default bound, it applies once the settings it read are
	// older than a second.
	deadline := time.Now().Add(patience)
	for slices.Contains(listNames(t, lazy.cat), "mcp_s_echo") {
		if time.Now().After(deadline) {
			t.Fatal("a catalogue with the default SettingsMaxAge never applied the change")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if slow := lazy.tool("mcp_s_slow"); slow.Effect() != agent.EffectReadOnly {
		t.Errorf("lazy slow: %s", slow.Effect())
	}
}

// Without the settings, nobody knows which tools an operator disabled: a
// first read that fails fails the listing. Once read, a failed re-read
// keeps what was read.
func TestSettingsStoreFailure(t *testing.T) {
	st := &failingStore{SettingsStore: openStore(t, filepath.Join(t.TempDir(), "andon.db"))}
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, &catalogue.Options{Settings: st, SettingsMaxAge: -1})
	st.fail.Store(true)
	if _, err := f.cat.List(context.Background()); !errors.Is(err, errStoreDown) {
		t.Fatalf("List with the settings unreadable = %v, want the store's error", err)
	}
	if tool, err := f.cat.Tool(context.Background(), "mcp_s_echo"); err == nil || tool != nil {
		t.Fatalf("Tool with the settings unreadable = %v, %v; want an error", tool, err)
	}
	st.fail.Store(false)
	setTool(t, f.cat, "mcp_s_echo", catalogue.ToolChange{Enabled: ptr(false)})
	if slices.Contains(listNames(t, f.cat), "mcp_s_echo") {
		t.Fatal("echo offered after it was disabled")
	}
	st.fail.Store(true)
	if names := listNames(t, f.cat); slices.Contains(names, "mcp_s_echo") || len(names) == 0 {
		t.Errorf("with the store down again, List = %v; want the settings read last applied", names)
	}
	if !f.logs.has("catalogue: re-reading the operators' tool settings failed; applying the ones read last") {
		t.Error("no warning about the failed re-read")
	}
}

func TestSetToolRefusals(t *testing.T) {
	st := openStore(t, filepath.Join(t.TempDir(), "andon.db"))
	f := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, &catalogue.Options{Settings: st})
	ctx := context.Background()
	// Nothing imported yet: no tool of that name.
	if _, err := f.cat.SetTool(ctx, "mcp_s_echo", catalogue.ToolChange{Enabled: ptr(false)}, "alice"); !errors.Is(err, catalogue.ErrUnknownTool) {
		t.Errorf("SetTool before import = %v, want ErrUnknownTool", err)
	}
	if _, err := f.cat.Import(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		tool string
		ch   catalogue.ToolChange
		by   string
		want error
	}{
		{"unknown tool", "mcp_s_nope", catalogue.ToolChange{Enabled: ptr(false)}, "alice", catalogue.ErrUnknownTool},
		{"nothing", "mcp_s_echo", catalogue.ToolChange{}, "alice", catalogue.ErrInvalidChange},
		{"bad effect", "mcp_s_echo", catalogue.ToolChange{Effect: "readonly"}, "alice", catalogue.ErrInvalidChange},
		{"nobody", "mcp_s_echo", catalogue.ToolChange{Enabled: ptr(false)}, "", catalogue.ErrInvalidChange},
	} {
		if _, err := f.cat.SetTool(ctx, c.tool, c.ch, c.by); !errors.Is(err, c.want) {
			t.Errorf("%s: SetTool = %v, want %v", c.name, err, c.want)
		}
	}
	if list, err := st.ToolSettingList(ctx); err != nil || len(list) != 0 {
		t.Errorf("refused changes stored %v, %v", list, err)
	}

	bare := newFixture(t, []catalogue.Server{{Name: "s", Command: stdio}}, nil, nil)
	bare.tool("mcp_s_echo")
	if _, err := bare.cat.SetTool(ctx, "mcp_s_echo", catalogue.ToolChange{Enabled: ptr(false)}, "alice"); !errors.Is(err, catalogue.ErrNoSettingsStore) {
		t.Errorf("SetTool without a store = %v, want ErrNoSettingsStore", err)
	}
}

// Import lists a server's tools again. A server that fails keeps offering
// the tools it had, and says why — without its secrets.
func TestImport(t *testing.T) {
	const secret = "s3cr3t-token-value"
	f := newFixture(t, []catalogue.Server{
		{Name: "s", Command: stdio},
		{Name: "web", URL: "https://tickets.example.com/mcp?key=" + secret, Headers: map[string]string{"Authorization": "Bearer " + secret}},
		{Name: "off", Command: stdio, Enabled: ptr(false)},
	}, nil, nil)
	var fail atomic.Bool
	f.intercept(func(_ context.Context, s catalogue.Server, next func() (mcp.Transport, error)) (mcp.Transport, error) {
		if fail.Load() {
			return nil, errors.New("dial https://tickets.example.com/mcp?key=" + secret + " with Bearer " + secret + ": refused")
		}
		return next()
	})
	ctx := context.Background()

	servers := f.cat.Servers()
	if len(servers) != 3 {
		t.Fatalf("Servers = %+v, want 3", servers)
	}
	if s := servers[0]; s.Name != "s" || s.Transport != "stdio" || !slices.Equal(s.Command, stdio) || !s.Enabled || s.Imported || s.Tools != 0 {
		t.Errorf("server s before import: %+v", s)
	}
	if s := servers[1]; s.Transport != "http" || s.URL != "https://tickets.example.com/mcp" {
		t.Errorf("server web: %+v, want its URL without the query", s)
	}
	if s := servers[2]; s.Enabled {
		t.Errorf("server off: %+v, want disabled", s)
	}
	if infos, err := f.cat.Tools(ctx, ""); err != nil || len(infos) != 0 {
		t.Errorf("Tools before any import = %d, %v; want none: listing imports nothing", len(infos), err)
	}

	infos, err := f.cat.Import(ctx, "s")
	if err != nil || len(infos) != 15 || infos[0].Name != "mcp_s_echo" || infos[0].Description != "Returns its text." {
		t.Fatalf("Import(s) = %d tools (%+v), %v", len(infos), infos, err)
	}
	lists := len(f.srv.ReceivedMessages("tools/list"))
	if _, err := f.cat.Import(ctx, "s"); err != nil {
		t.Fatal(err)
	}
	if again := len(f.srv.ReceivedMessages("tools/list")); again != lists+1 {
		t.Errorf("a second Import sent %d tools/list, want 1", again-lists)
	}
	if s := f.cat.Servers()[0]; !s.Imported || s.Tools != 15 || s.Error != "" {
		t.Errorf("server s after import: %+v", s)
	}

	// web fails: an ImportError naming it, without the secret.
	fail.Store(true)
	_, err = f.cat.Import(ctx, "web")
	var ie *catalogue.ImportError
	if !errors.As(err, &ie) || ie.Server != "web" || !strings.Contains(err.Error(), `server "web"`) || strings.Contains(err.Error(), secret) {
		t.Fatalf("Import(web) = %v, want an ImportError naming web and no secret", err)
	}
	if s := f.cat.Servers()[1]; s.Imported || s.Error == "" || strings.Contains(s.Error, secret) || !strings.Contains(s.Error, "refused") {
		t.Errorf("server web after a failed import: %+v", s)
	}

	// s loses its connection and cannot reconnect: the import fails, and
	// its tools stay.
	f.cut()
	if _, err := f.cat.Import(ctx, "s"); !errors.As(err, &ie) || ie.Server != "s" {
		t.Fatalf("Import(s) with the server gone = %v, want an ImportError", err)
	}
	if s := f.cat.Servers()[0]; s.Tools != 15 || s.Error == "" {
		t.Errorf("server s after a failed re-import: %+v, want its 15 tools kept and the error", s)
	}
	if infos, err := f.cat.Tools(ctx, "s"); err != nil || len(infos) != 15 {
		t.Errorf("Tools(s) after a failed re-import = %d, %v", len(infos), err)
	}
	fail.Store(false)
	if _, err := f.cat.Import(ctx, "s"); err != nil {
		t.Fatalf("Import(s) once the server is back = %v", err)
	}
	if s := f.cat.Servers()[0]; s.Error != "" {
		t.Errorf("a successful import keeps the error %q", s.Error)
	}

	if _, err := f.cat.Import(ctx, "nope"); !errors.Is(err, catalogue.ErrUnknownServer) {
		t.Errorf("Import(nope) = %v, want ErrUnknownServer", err)
	}
	if _, err := f.cat.Tools(ctx, "nope"); !errors.Is(err, catalogue.ErrUnknownServer) {
		t.Errorf("Tools(nope) = %v, want ErrUnknownServer", err)
	}
	if _, err := f.cat.Import(ctx, "off"); !errors.Is(err, catalogue.ErrServerDisabled) {
		t.Errorf("Import(off) = %v, want ErrServerDisabled", err)
	}
	if n := len(f.srv.ReceivedMessages("tools/list")); n == 0 {
		t.Error("no tools/list reached the server")
	}

	// A cancelled import is abandoned, under the caller's context.
	f.cut()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.cat.Import(cctx, "s"); !errors.Is(err, context.Canceled) {
		t.Errorf("Import with a cancelled context = %v, want context.Canceled", err)
	}
}
