package catalogue_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
)

// A server's log message during a tool call becomes a step of the run —
// levelled, as text, with the server's own configured secrets scrubbed —
// and reaches the process log with the server's name.
func TestServerLogInTheTimeline(t *testing.T) {
	for _, rev := range elicitRevisions {
		t.Run(rev, func(t *testing.T) {
			b := newElicitBundle(t, rev, 0, func(s *catalogue.Server) { s.Env = map[string]string{"API_TOKEN": "tok-7f3a9c"} })
			run := b.submit(`{"log":"deploying with tok-7f3a9c <script>x</script>"}`)
			b.question(run.ID)
			// The log step is recorded on its own goroutine: wait for it
			// before answering (the deadline only keeps a broken test
			// from hanging).
			var logStep *agent.Step
			deadline := time.Now().Add(30 * time.Second)
			for logStep == nil && time.Now().Before(deadline) {
				logStep = stepOf(b.steps(run.ID), agent.StepLog)
				time.Sleep(5 * time.Millisecond)
			}
			if logStep == nil {
				t.Fatal("the server's log message never became a step")
			}
			if err := b.rt.Answer(context.Background(), agent.Actor{ID: "alice"}, agent.Reply{RunID: run.ID, Content: json.RawMessage(`{"name":"x"}`)}); err != nil {
				t.Fatal(err)
			}
			b.waitStatus(run.ID, agent.StatusCompleted)
			var args map[string]string
			json.Unmarshal(logStep.Args, &args)
			if logStep.Text != "deploying with [redacted] <script>x</script>" || logStep.Tool != "mcp_s_elicit" ||
				args["server"] != "s" || args["level"] != "info" || args["logger"] != "mcptest" {
				t.Fatalf("log step = %+v (args %v)", logStep, args)
			}
			if n, _ := b.f.logs.count("mcp: server log"); n == 0 {
				t.Fatal("the server's log message is not in the process log")
			}
		})
	}
}
