package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/tokenizer"
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

// A warm start for a tool user: a demonstration of a call and its answer
// renders to the tokens a rollout would hold, the tool's result inserted
// and masked (mask 0) so that supervised training (sft.FromTrajectory,
// sft.Trainer.TrainPairs) learns only what the model writes.
func ExampleRenderer_Demonstration() {
	dir, err := os.MkdirTemp("", "demo")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	if err := tokenizer.WriteTinyDir(dir, []string{"<call>", "</call>", "<result>", "</result>"}); err != nil {
		panic(err)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		panic(err)
	}
	r, err := agent.NewRenderer(tok, agent.RendererOptions{Format: agent.Plain{}})
	if err != nil {
		panic(err)
	}
	traj, err := r.Demonstration(agent.Demonstration{
		Prompt: agent.Prompt{Text: "Q:123*45="},
		Turns: []agent.DemoTurn{
			{Text: "<call>calculator 123*45</call>", Results: []string{"5535"}},
			{Text: "5535"},
		},
	}, []*agent.Tool{agent.Calculator()})
	if err != nil {
		panic(err)
	}
	// The completion in runs of equal mask: 1 the model writes, 0 inserted.
	for start := 0; start < len(traj.IDs); {
		end := start
		for end < len(traj.IDs) && traj.Mask[end] == traj.Mask[start] {
			end++
		}
		fmt.Printf("%d %q\n", traj.Mask[start], tok.Tokenizer.Decode(traj.IDs[start:end], false))
		start = end
	}
	fmt.Println(traj.Turns, "turns,", traj.Calls, "call")
	// Output:
	// 1 "<call>calculator 123*45</call><|im_end|>"
	// 0 "<result>5535</result>"
	// 1 "5535<|im_end|>"
	// 2 turns, 1 call
}
