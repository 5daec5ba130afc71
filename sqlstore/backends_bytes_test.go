package sqlstore_test

import (
	"strings"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/sqlstore"
)

// The runtime cuts a step's text at a byte count (agent's truncate), which
// can split a UTF-8 sequence, and tool output may hold NUL bytes. Both
// stores keep such text byte for byte: "stored whole".
func TestStepTextIsStoredByteForByte(t *testing.T) {
	t.Parallel()
	onEachBackend(t, func(t *testing.T, open func(t *testing.T) *sqlstore.Store) {
		ctx := t.Context()
		s := open(t)
		if err := s.RunInsert(ctx, &agent.Run{ID: "r1", Owner: "alice", Status: agent.StatusRunning, LeaseOwner: "w", LeaseExpires: time.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
		split := strings.Repeat("é", 3)[:5] // "éé" and half of the third
		for _, text := range []string{"", split, "a\x00b", "\xff\xfe", "naïve ✓"} {
			st := &agent.Step{RunID: "r1", Kind: agent.StepTool, Tool: "fetch", Outcome: agent.OutcomeOK, Text: text}
			if err := s.StepAppend(ctx, "w", st); err != nil {
				t.Fatalf("StepAppend(text %q): %v", text, err)
			}
			steps, err := s.StepList(ctx, "r1")
			if err != nil {
				t.Fatal(err)
			}
			if got := steps[st.Seq-1].Text; got != text {
				t.Fatalf("text %q read back as %q", text, got)
			}
		}
	})
}
