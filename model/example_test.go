package model_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"

	"github.com/andonhq/andon/model"
)

// lookup is a Model of its own: it asks for the weather tool once, then
// answers with what the tool said. The runtime drives any Model the same
// way: it sends the conversation and the tools on offer, makes the calls
// the response asks for, and appends their results as tool messages.
type lookup struct{}

func (lookup) Complete(ctx context.Context, req *model.Request) (*model.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // a cancelled run cancels its model call too
	}
	last := req.Messages[len(req.Messages)-1]
	if last.Role == model.RoleTool {
		return &model.Response{Text: "The tool says: " + last.Text}, nil
	}
	return &model.Response{ToolCalls: []model.ToolCall{{
		ID: "call_0", Name: req.Tools[0].Name, Arguments: json.RawMessage(`{"city":"Oslo"}`),
	}}}, nil
}

func Example() {
	ctx := context.Background()
	var m model.Model = lookup{}
	req := &model.Request{
		Messages: []model.Message{{Role: model.RoleUser, Text: "What is the weather in Oslo?"}},
		Tools:    []model.ToolSpec{{Name: "weather", Description: "Current weather of a city."}},
	}
	for {
		resp, err := m.Complete(ctx, req)
		if err != nil {
			log.Fatal(err)
		}
		req.Messages = append(req.Messages, model.Message{Role: model.RoleAssistant, Text: resp.Text, ToolCalls: resp.ToolCalls})
		if len(resp.ToolCalls) == 0 {
			fmt.Println(resp.Text)
			break
		}
		for _, c := range resp.ToolCalls {
			fmt.Printf("calling %s %s\n", c.Name, c.Arguments)
			req.Messages = append(req.Messages, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Text: "sunny, 12 °C"})
		}
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err := m.Complete(cancelled, req)
	fmt.Println(err)
	// Output:
	// calling weather {"city":"Oslo"}
	// The tool says: sunny, 12 °C
	// context canceled
}
