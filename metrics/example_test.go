package metrics_test

import (
	"bufio"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/andonhq/andon/agent"
	"github.com/andonhq/andon/catalogue"
	"github.com/andonhq/andon/mcp"
	"github.com/andonhq/andon/metrics"
)

// A process's metrics are fed by hooks — here called by hand; in andon,
// catalogue.Options.OnCall is m.ToolCall and mcp.ClientOptions.OnCancelSent
// is m.CancelSent — and scraped in the Prometheus text format.
func ExampleMetrics() {
	m := metrics.New(nil)

	m.ToolCall(catalogue.CallReport{Server: "tickets", Tool: "mcp_tickets_create", Outcome: agent.OutcomeOK, Took: 40 * time.Millisecond})
	m.ToolCall(catalogue.CallReport{Server: "tickets", Tool: "mcp_tickets_create", Outcome: agent.OutcomeCancelled, Took: 2 * time.Second})
	m.CancelSent(mcp.TransportStdio, 300*time.Microsecond)

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL + "/metrics")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "andon_tool_calls_total{") || strings.HasPrefix(line, "andon_cancel_to_wire_seconds_count") {
			fmt.Println(line)
		}
	}
	// Output:
	// andon_cancel_to_wire_seconds_count{transport="stdio"} 1
	// andon_tool_calls_total{outcome="cancelled",server="tickets"} 1
	// andon_tool_calls_total{outcome="ok",server="tickets"} 1
}
