package main

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/tokenizer"
)

// problem is one multiplication: a three-digit number times a two-digit
// one, a product of four or five digits that a model of this size cannot
// compute in its head.
type problem struct{ A, B int }

func (p problem) product() int { return p.A * p.B }

// problems draws n problems from a seeded stream; train and held-out
// problems come from different streams.
func problems(seed uint64, n int) []problem {
	rng := rand.New(rand.NewPCG(seed, 0x61676e74))
	out := make([]problem, n)
	for i := range out {
		out[i] = problem{100 + rng.IntN(900), 10 + rng.IntN(90)}
	}
	return out
}

// prompt is the problem as the model reads it: compact text for the tiny
// model ("Q:123*45="), a chat for a real one.
func (p problem) prompt(tiny bool) agent.Prompt {
	if tiny {
		return agent.Prompt{Text: fmt.Sprintf("Q:%d*%d=", p.A, p.B), Meta: map[string]string{"answer": strconv.Itoa(p.product())}}
	}
	return agent.Prompt{
		Messages: []tokenizer.Message{{Role: "user", Content: fmt.Sprintf("What is %d * %d? Use the calculator, then reply with the number only.", p.A, p.B)}},
		Meta:     map[string]string{"answer": strconv.Itoa(p.product())},
	}
}

// demonstration is the warm-start conversation of p: a call of the
// calculator in format f, its result, and the number; or, without the
// tool, the number alone.
func (p problem) demonstration(tool, tiny bool, f agent.Format) (agent.Demonstration, error) {
	answer := strconv.Itoa(p.product())
	d := agent.Demonstration{Prompt: p.prompt(tiny)}
	if tool {
		call, err := callText(f, fmt.Sprintf("%d*%d", p.A, p.B))
		if err != nil {
			return d, fmt.Errorf("agent: warm start: %w", err)
		}
		d.Turns = append(d.Turns, agent.DemoTurn{Text: call, Results: []string{answer}})
	}
	d.Turns = append(d.Turns, agent.DemoTurn{Text: answer})
	return d, nil
}

// correct reports whether a trajectory's final answer is the number answer.
func correct(final, answer string) bool {
	final = strings.TrimSuffix(strings.TrimSpace(final), ".")
	v, err := strconv.Atoi(final)
	return err == nil && strconv.Itoa(v) == answer
}

// report is one evaluation on held-out problems.
type report struct {
	Step     int     `json:"step"`
	Accuracy float64 `json:"accuracy"`
	ToolRate float64 `json:"tool_call_rate"` // trajectories with a call
	// Alone is the accuracy of the trajectories without a call (NaN when
	// every one calls): what the model does without the tool.
	Alone    float64 `json:"-"`
	Failures float64 `json:"failure_frequency"` // failed calls per call
	Turns    float64 `json:"turns_per_trajectory"`
	Problems int     `json:"problems"`
	Example  string  `json:"example"`
}

// evaluate plays every held-out problem once (greedy) and scores it.
func evaluate(ctx context.Context, run *agent.Runner, held []problem, tiny bool, step int) (report, error) {
	prompts := make([]agent.Prompt, len(held))
	for i, p := range held {
		prompts[i] = p.prompt(tiny)
	}
	b, err := run.Rollout(ctx, prompts, 0)
	if err != nil {
		return report{}, err
	}
	r := report{Step: step, Problems: len(held), Failures: b.FailureFrequency(), Turns: b.TurnsPerTrajectory()}
	alone, aloneRight := 0, 0
	for i, t := range b.Trajectories {
		ok := correct(t.FinalContent(), strconv.Itoa(held[i].product()))
		if ok {
			r.Accuracy++
		}
		if t.Calls > 0 {
			r.ToolRate++
		} else {
			alone++
			if ok {
				aloneRight++
			}
		}
	}
	r.Alone = math.NaN()
	if alone > 0 {
		r.Alone = float64(aloneRight) / float64(alone)
	}
	r.Accuracy /= float64(len(held))
	r.ToolRate /= float64(len(held))
	if len(b.Trajectories) > 0 {
		r.Example = prompts[0].Text + b.Trajectories[0].Transcript()
	}
	return r, nil
}
