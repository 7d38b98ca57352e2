package reward

import (
	"math"
)

// Func is a reward: it scores one completion of a prompt against the
// reference answer (which may be empty when a task has none). Larger is
// better. The signature is fixed; richer context comes through Scorer.
type Func func(prompt, completion, answer string) float64

// Sample is all a reward may look at. Fields are only ever added.
type Sample struct {
	Prompt     string // the text the policy was given
	Completion string // the policy's text, without the prompt
	Answer     string // the reference answer; may be empty
	// Turn is the 0-based turn of a multi-turn game; 0 for single-turn tasks.
	Turn int
	// Meta carries per-example data from the dataset or environment. May be nil.
	Meta map[string]string
	// CompletionIDs are the completion's tokens as generated, the EOS token
	// included when generation stopped on it (TRL's completion_ids); the
	// trainer and grpo.Evaluate fill them. Token-based rewards
	// (SoftOverlongPunishment, RepetitionPenalty) read them.
	CompletionIDs []int32
	// Messages is the prompt as chat messages when the example is a
	// conversation (nil for a plain-text prompt; Prompt is then the text of
	// the last message). A reward model renders them, with the completion
	// as the assistant's turn, through its own chat template.
	Messages []Message
	// Trajectory is a tool-calling trajectory as chat turns, in order:
	// each assistant turn (its text outside tool calls) and each tool
	// result (Role "tool", Name the tool). Nil for a completion without
	// tools; with tools, Completion is the whole trajectory as text
	// (package agent's Trajectory.Transcript) and Final the answer.
	Trajectory []Message
	// Env is the trajectory's environment (an agent.Environment) when the
	// rollout had one, for rewards that read its state; nil otherwise.
	Env any
}

// Message is one turn of a conversational prompt or a trajectory.
type Message struct {
	Role    string // "system", "user", "assistant", or "tool" (a result)
	Content string
	Name    string // the tool of a result; "" otherwise
}

// Final is the answer of a sample: for a tool-calling trajectory the text
// of its last assistant turn (outside tool calls), else the Completion.
func (s Sample) Final() string {
	if s.Trajectory == nil {
		return s.Completion
	}
	for i := len(s.Trajectory) - 1; i >= 0; i-- {
		if s.Trajectory[i].Role == "assistant" {
			return s.Trajectory[i].Content
		}
	}
	return ""
}

// notApplicable is the bit pattern of NotApplicable's NaN: a quiet NaN
// whose payload no arithmetic produces, so a reward that computes NaN by
// mistake still counts as a failed call.
const notApplicable = 0x7ff8_4e41_4e41_0001

// NotApplicable returns the score a reward gives a sample it does not
// apply to (TRL's None): the reward is then left out for that sample, not
// scored 0. The weighted total sums the rewards that applied, the
// advantages leave it out as TRL 1.16 does, and the reward's logged mean
// and std are over the samples it applied to. A sample no reward applied
// to is unscorable, as in TRL: its total here is 0, but the trainer leaves
// it out of the baselines and the logged reward, gives it advantage 0 and
// warns. It is a NaN: test for it with IsNotApplicable.
func NotApplicable() float64 { return math.Float64frombits(notApplicable) }

// IsNotApplicable reports whether v is NotApplicable().
func IsNotApplicable(v float64) bool { return math.Float64bits(v) == notApplicable }

// Scorer is for rewards that need more than Func's three strings.
// Score must be safe for concurrent use when used with an Evaluator.
type Scorer interface {
	Score(s Sample) float64
}

// Score calls f(s.Prompt, s.Completion, s.Answer), so every Func is a Scorer.
func (f Func) Score(s Sample) float64 { return f(s.Prompt, s.Completion, s.Answer) }

// ScorerFunc lets a plain function of a Sample be a Scorer.
type ScorerFunc func(s Sample) float64

// Score returns f(s).
func (f ScorerFunc) Score(s Sample) float64 { return f(s) }

// Named is a reward with the name it is logged under and its weight in the
// total. A zero Weight counts the reward in the logs but not in the total.
type Named struct {
	Name   string  // metric name, e.g. "format" (logged as rewards/format/mean)
	Weight float64 // multiplier in the weighted total
	Scorer Scorer  // the reward itself; a Func works here
}

// Scale returns a Func whose score is w times f's.
func Scale(w float64, f Func) Func {
	return func(p, c, a string) float64 { return w * f(p, c, a) }
}

// Sum returns a Func whose score is the sum of the scores of fs.
// Sum() scores 0.
func Sum(fs ...Func) Func {
	fs = append([]Func(nil), fs...)
	return func(p, c, a string) float64 {
		total := 0.0
		for _, f := range fs {
			total += f(p, c, a)
		}
		return total
	}
}

// Weighted returns a Scorer whose score is the sum over rs of
// Weight × Scorer.Score, of those that applied (not NotApplicable). It does not recover panics; use an Evaluator for
// user code.
func Weighted(rs ...Named) Scorer {
	rs = append([]Named(nil), rs...)
	return ScorerFunc(func(s Sample) float64 {
		total := 0.0
		for _, r := range rs {
			if v := r.Scorer.Score(s); !IsNotApplicable(v) {
				total += r.Weight * v
			}
		}
		return total
	})
}

// Safe returns a Func that behaves like f but scores 0 where f panics or
// returns NaN (other than NotApplicable) or ±Inf. It does not count failures or bound the time f
// takes; the Evaluator does both.
func Safe(f Func) Func {
	return func(p, c, a string) (score float64) {
		defer func() {
			if recover() != nil {
				score = 0
			}
		}()
		v := f(p, c, a)
		if IsNotApplicable(v) {
			return v
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return 0
		}
		return v
	}
}
