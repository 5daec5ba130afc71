package storetest

import (
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
)

// ExerciseToolSettings runs the suite of catalogue.SettingsStore: operators'
// settings of tools, one per server and tool, merged field by field, with
// who changed them and when. newStore returns a fresh, empty store for one
// test and arranges its cleanup. Every test runs in parallel with the
// others.
func ExerciseToolSettings(t *testing.T, newStore func(t *testing.T) catalogue.SettingsStore) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s catalogue.SettingsStore)
	}{
		{"AnEmptyStoreHasNoSettings", testToolSettingsEmpty},
		{"AnUpdateCreatesTheSettingAndReturnsIt", testToolSettingCreate},
		{"AnUpdateKeepsTheFieldsItDoesNotSet", testToolSettingMerge},
		{"SettingsArePerServerAndTool", testToolSettingPerTool},
		{"ListIsOrderedByServerThenTool", testToolSettingOrder},
		{"AnInvalidEffectIsRefusedAndChangesNothing", testToolSettingBadEffect},
		{"ConcurrentUpdatesOfDifferentFieldsAllLand", testToolSettingConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, newStore(t))
		})
	}
}

func ptr[T any](v T) *T { return &v }

// setAt is the time of the suite's n-th change: whole milliseconds, as
// every store keeps them.
func setAt(n int) time.Time { return at(time.Duration(n)*time.Second + 123*time.Millisecond) }

func sameSetting(got, want catalogue.ToolSetting) bool {
	return got.Server == want.Server && got.Tool == want.Tool &&
		reflect.DeepEqual(got.Enabled, want.Enabled) && got.Effect == want.Effect &&
		reflect.DeepEqual(got.RequiresApproval, want.RequiresApproval) &&
		got.UpdatedBy == want.UpdatedBy && got.UpdatedAt.Equal(want.UpdatedAt)
}

func showSetting(st catalogue.ToolSetting) string {
	b := func(p *bool) string {
		if p == nil {
			return "unset"
		}
		return fmt.Sprint(*p)
	}
	return fmt.Sprintf("{%s/%s enabled=%s effect=%q approval=%s by=%q at=%s}",
		st.Server, st.Tool, b(st.Enabled), st.Effect, b(st.RequiresApproval), st.UpdatedBy, st.UpdatedAt.Format(time.RFC3339Nano))
}

func listSettings(t *testing.T, s catalogue.SettingsStore) []catalogue.ToolSetting {
	t.Helper()
	list, err := s.ToolSettingList(t.Context())
	if err != nil {
		t.Fatalf("ToolSettingList: %v", err)
	}
	return list
}

func update(t *testing.T, s catalogue.SettingsStore, ch catalogue.ToolSetting) catalogue.ToolSetting {
	t.Helper()
	st, err := s.ToolSettingUpdate(t.Context(), ch)
	if err != nil {
		t.Fatalf("ToolSettingUpdate(%s): %v", showSetting(ch), err)
	}
	return st
}

func testToolSettingsEmpty(t *testing.T, s catalogue.SettingsStore) {
	if list := listSettings(t, s); len(list) != 0 {
		t.Fatalf("a fresh store lists %d settings, want none", len(list))
	}
}

func testToolSettingCreate(t *testing.T, s catalogue.SettingsStore) {
	want := catalogue.ToolSetting{Server: "tickets", Tool: "create", Enabled: ptr(false),
		Effect: agent.EffectIdempotentWrite, RequiresApproval: ptr(true), UpdatedBy: "alice", UpdatedAt: setAt(1)}
	if got := update(t, s, want); !sameSetting(got, want) {
		t.Errorf("ToolSettingUpdate returned %s, want %s", showSetting(got), showSetting(want))
	}
	list := listSettings(t, s)
	if len(list) != 1 || !sameSetting(list[0], want) {
		t.Fatalf("ToolSettingList = %v, want exactly %s", list, showSetting(want))
	}

	// A setting of one field leaves the others unset.
	only := catalogue.ToolSetting{Server: "tickets", Tool: "search", Effect: agent.EffectReadOnly, UpdatedBy: "bob", UpdatedAt: setAt(2)}
	if got := update(t, s, only); !sameSetting(got, only) {
		t.Errorf("ToolSettingUpdate returned %s, want %s", showSetting(got), showSetting(only))
	}
}

func testToolSettingMerge(t *testing.T, s catalogue.SettingsStore) {
	update(t, s, catalogue.ToolSetting{Server: "fs", Tool: "write", Enabled: ptr(true),
		Effect: agent.EffectNonIdempotentWrite, UpdatedBy: "alice", UpdatedAt: setAt(1)})
	got := update(t, s, catalogue.ToolSetting{Server: "fs", Tool: "write", RequiresApproval: ptr(false), UpdatedBy: "bob", UpdatedAt: setAt(2)})
	want := catalogue.ToolSetting{Server: "fs", Tool: "write", Enabled: ptr(true),
		Effect: agent.EffectNonIdempotentWrite, RequiresApproval: ptr(false), UpdatedBy: "bob", UpdatedAt: setAt(2)}
	if !sameSetting(got, want) {
		t.Fatalf("after a second update: %s, want %s", showSetting(got), showSetting(want))
	}
	got = update(t, s, catalogue.ToolSetting{Server: "fs", Tool: "write", Enabled: ptr(false),
		Effect: agent.EffectReadOnly, UpdatedBy: "carol", UpdatedAt: setAt(3)})
	want.Enabled, want.Effect, want.UpdatedBy, want.UpdatedAt = ptr(false), agent.EffectReadOnly, "carol", setAt(3)
	if !sameSetting(got, want) {
		t.Fatalf("after a third update: %s, want %s", showSetting(got), showSetting(want))
	}
	if list := listSettings(t, s); len(list) != 1 || !sameSetting(list[0], want) {
		t.Fatalf("ToolSettingList = %v, want exactly %s", list, showSetting(want))
	}
}

func testToolSettingPerTool(t *testing.T, s catalogue.SettingsStore) {
	// The same tool name on two servers, and two tools of one server.
	a := update(t, s, catalogue.ToolSetting{Server: "a", Tool: "echo", Enabled: ptr(false), UpdatedBy: "u", UpdatedAt: setAt(1)})
	b := update(t, s, catalogue.ToolSetting{Server: "b", Tool: "echo", Effect: agent.EffectReadOnly, UpdatedBy: "u", UpdatedAt: setAt(2)})
	c := update(t, s, catalogue.ToolSetting{Server: "a", Tool: "slow", RequiresApproval: ptr(true), UpdatedBy: "u", UpdatedAt: setAt(3)})
	list := listSettings(t, s)
	if len(list) != 3 || !sameSetting(list[0], a) || !sameSetting(list[1], c) || !sameSetting(list[2], b) {
		t.Fatalf("ToolSettingList = %v, want %s, %s, %s", list, showSetting(a), showSetting(c), showSetting(b))
	}
}

func testToolSettingOrder(t *testing.T, s catalogue.SettingsStore) {
	for i, k := range [][2]string{{"b", "z"}, {"a", "y"}, {"b", "a"}, {"a", "z"}} {
		update(t, s, catalogue.ToolSetting{Server: k[0], Tool: k[1], Enabled: ptr(true), UpdatedBy: "u", UpdatedAt: setAt(i)})
	}
	var got []string
	for _, st := range listSettings(t, s) {
		got = append(got, st.Server+"/"+st.Tool)
	}
	if want := []string{"a/y", "a/z", "b/a", "b/z"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ToolSettingList order %v, want %v", got, want)
	}
}

func testToolSettingBadEffect(t *testing.T, s catalogue.SettingsStore) {
	want := update(t, s, catalogue.ToolSetting{Server: "a", Tool: "t", Effect: agent.EffectReadOnly, UpdatedBy: "u", UpdatedAt: setAt(1)})
	_, err := s.ToolSettingUpdate(t.Context(), catalogue.ToolSetting{Server: "a", Tool: "t", Effect: "readonly", Enabled: ptr(false), UpdatedBy: "v", UpdatedAt: setAt(2)})
	if err == nil {
		t.Fatal("ToolSettingUpdate with effect \"readonly\" succeeded, want an error")
	}
	if list := listSettings(t, s); len(list) != 1 || !sameSetting(list[0], want) {
		t.Fatalf("a refused update changed the settings: %v, want exactly %s", list, showSetting(want))
	}
	if _, err := s.ToolSettingUpdate(t.Context(), catalogue.ToolSetting{Server: "a", Tool: "new", Effect: "write", UpdatedBy: "v", UpdatedAt: setAt(3)}); err == nil {
		t.Fatal("ToolSettingUpdate creating a setting with effect \"write\" succeeded, want an error")
	}
	if list := listSettings(t, s); len(list) != 1 {
		t.Fatalf("a refused update created a setting: %v", list)
	}
}

func testToolSettingConcurrent(t *testing.T, s catalogue.SettingsStore) {
	// Each writer sets one field of one tool at once: the merge is done by
	// the store in one step, so none overwrites another's field.
	const tools = 8
	changes := []func(ch *catalogue.ToolSetting){
		func(ch *catalogue.ToolSetting) { ch.Enabled = ptr(false) },
		func(ch *catalogue.ToolSetting) { ch.Effect = agent.EffectIdempotentWrite },
		func(ch *catalogue.ToolSetting) { ch.RequiresApproval = ptr(true) },
	}
	var wg sync.WaitGroup
	errs := make(chan error, tools*len(changes))
	for i := range tools {
		for j, set := range changes {
			wg.Go(func() {
				ch := catalogue.ToolSetting{Server: "s", Tool: fmt.Sprintf("t%d", i), UpdatedBy: fmt.Sprintf("u%d", j), UpdatedAt: setAt(j)}
				set(&ch)
				if _, err := s.ToolSettingUpdate(t.Context(), ch); err != nil {
					errs <- err
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	list := listSettings(t, s)
	if len(list) != tools {
		t.Fatalf("%d settings, want %d", len(list), tools)
	}
	for _, st := range list {
		if st.Enabled == nil || *st.Enabled || st.Effect != agent.EffectIdempotentWrite || st.RequiresApproval == nil || !*st.RequiresApproval {
			t.Errorf("%s lost a concurrent update: want enabled=false, effect=idempotent_write, approval=true", showSetting(st))
		}
	}
}
