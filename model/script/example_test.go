package script_test

import (
	"context"
	"fmt"

	"github.com/andonhq/andon/model"
	"github.com/andonhq/andon/model/script"
)

func Example() {
	s, err := script.Parse([]byte(`
steps:
  - tool_calls:
      - name: mcp_demo_echo
        arguments: {text: hello}
  - text: The server said hello.
`))
	if err != nil {
		fmt.Println(err)
		return
	}
	m, err := script.New(s)
	if err != nil {
		fmt.Println(err)
		return
	}
	conv := []model.Message{{Role: model.RoleUser, Text: "Say hello through the echo tool."}}
	for {
		resp, err := m.Complete(context.Background(), &model.Request{Messages: conv})
		if err != nil {
			fmt.Println(err)
			return
		}
		conv = append(conv, model.Message{Role: model.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) == 0 {
			fmt.Println("answer:", resp.Text)
			return
		}
		for _, c := range resp.ToolCalls {
			fmt.Println("call:", c.ID, c.Name, string(c.Arguments))
			conv = append(conv, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Text: "hello"})
		}
	}
	// Output:
	// call: call_1_1 mcp_demo_echo {"text":"hello"}
	// answer: The server said hello.
}

func ExampleParse_errors() {
	_, err := script.Parse([]byte("steps:\n  - text: hi\n  - tool_calls: [{name: x, args: {}}]\n"))
	fmt.Println(err)
	_, err = script.Parse([]byte(`{"steps": [{"wait_ms": 100}]}`))
	fmt.Println(err)
	// Output:
	// script: step 2: json: unknown field "args"
	// script: step 1 has neither text nor tool_calls: a step is tool calls, a final answer (text), or both
}
