package agent_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/grpokit/grpokit/agent"
)

type ConvertArgs struct {
	Value float64 `json:"value" desc:"the amount"`
	From  string  `json:"from" enum:"km,mi"`
}

func ExampleNewTool() {
	convert, err := agent.NewTool("convert", "Convert a distance between km and miles.",
		func(ctx context.Context, a ConvertArgs) (string, error) {
			if a.From == "km" {
				return fmt.Sprintf("%.2f mi", a.Value/1.609344), nil
			}
			return fmt.Sprintf("%.2f km", a.Value*1.609344), nil
		})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(convert.Spec()))
	ts, _ := agent.NewToolset(convert)
	// A call as agent.Hermes parses it from "<tool_call>...</tool_call>".
	_, calls := agent.Hermes{}.Parse(`<tool_call>
{"name": "convert", "arguments": {"value": 10, "from": "km"}}
</tool_call>`)
	fmt.Println(agent.Executor{}.RunCall(context.Background(), ts, calls[0]).Content)
	bad := agent.Executor{}.RunCall(context.Background(), ts, agent.Call{Name: "convert", Arguments: json.RawMessage(`{"value": 1, "from": "ft"}`)})
	fmt.Println(bad.Content)
	// Output:
	// {"type":"function","function":{"name":"convert","description":"Convert a distance between km and miles.","parameters":{"type":"object","properties":{"value":{"type":"number","description":"the amount"},"from":{"type":"string","enum":["km","mi"]}},"required":["value","from"]}}}
	// 6.21 mi
	// {"error":"tool \"convert\": bad arguments: argument \"from\": \"ft\" is not one of \"km\", \"mi\""}
}
