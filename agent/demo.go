package agent

import (
	"errors"
	"fmt"
)

// Demonstration is a tool-using conversation to imitate, for a supervised
// warm start (package sft) before GRPO: the prompt, then the assistant's
// turns, each that makes calls followed by the results of its calls, the
// last one the final answer.
type Demonstration struct {
	// Prompt is what a rollout of this conversation starts from.
	Prompt Prompt
	// Turns are the assistant's turns in order. Every turn but the last
	// makes at least one call; the last makes none.
	Turns []DemoTurn
}

// DemoTurn is one assistant turn of a Demonstration.
type DemoTurn struct {
	// Text is the turn as the model should write it, calls written in the
	// Format's syntax (Plain: "<call>calculator 6*7</call>"; Hermes:
	// "<tool_call>\n{...}\n</tool_call>"), without the end-of-turn token.
	Text string
	// Results are the contents the tools return, one per call of Text in
	// order (a failed call's result is its {"error": ...} text).
	Results []string
}

// Demonstration renders d as the Trajectory a Runner makes when the model
// writes d's turns: the prompt rendered with tools declared (PromptIDs),
// then per turn its text encoded and the tokenizer's EOS, then the
// insertion of its results as the chat template renders them (ResultIDs),
// exactly the tokens a rollout appends. Mask is 1 on the tokens the model
// writes (turns and their EOS) and 0 on inserted ones, so that training on
// it (sft.FromTrajectory) puts no loss on tool results, as in GRPO and as
// TRL masks tool tokens. Every turn but the last must make calls (as Parse
// reads them) with one result each; the last must make none.
func (r *Renderer) Demonstration(d Demonstration, tools []*Tool) (Trajectory, error) {
	if len(d.Turns) == 0 {
		return Trajectory{}, errors.New("agent: demonstration: no turns")
	}
	if len(r.tok.EOS) == 0 {
		return Trajectory{}, errors.New("agent: demonstration: the tokenizer has no EOS token to end a turn")
	}
	ids, err := r.PromptIDs(d.Prompt, tools)
	if err != nil {
		return Trajectory{}, fmt.Errorf("agent: demonstration: %w", err)
	}
	t := Trajectory{PromptIDs: ids}
	for i, turn := range d.Turns {
		content, calls := r.format.Parse(turn.Text)
		last := i == len(d.Turns)-1
		switch {
		case last && len(calls) > 0:
			return Trajectory{}, fmt.Errorf("agent: demonstration: the last turn makes %d calls; it must be the final answer", len(calls))
		case !last && len(calls) == 0:
			return Trajectory{}, fmt.Errorf("agent: demonstration: turn %d makes no call (only the last turn may)", i+1)
		case len(turn.Results) != len(calls):
			return Trajectory{}, fmt.Errorf("agent: demonstration: turn %d makes %d calls and has %d results", i+1, len(calls), len(turn.Results))
		}
		t.addTurn(r.format, append(r.tok.Tokenizer.Encode(turn.Text, false), r.tok.EOS[0]), turn.Text, content, calls)
		if last {
			break
		}
		res := make([]Result, len(calls))
		for j, c := range calls {
			// An unreadable call stays in, as in a rollout: a
			// demonstration may show recovering from one.
			res[j] = Result{Name: c.Name, Content: turn.Results[j], Err: c.Err}
			if c.Err != nil {
				t.Failures++
			}
		}
		ins, err := r.ResultIDs(res)
		if err != nil {
			return Trajectory{}, fmt.Errorf("agent: demonstration: %w", err)
		}
		t.addResults(r.format, ins, res)
		t.Calls += len(calls)
	}
	return t, nil
}
