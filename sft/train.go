package sft

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"time"

	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/memplan"
)

// Encoder is what Trainer.Train needs of a policy besides grpo.Policy:
// turning an example's prompt and a target text into tokens. grpo.LMPolicy
// implements it.
type Encoder interface {
	// PromptIDs returns the prompt's tokens (the last maxLen when maxLen > 0).
	PromptIDs(ex dataset.Example, maxLen int) ([]int, error)
	// TargetIDs returns the tokens of a completion to learn, ending in EOS.
	TargetIDs(text string) ([]int, error)
}

// Options configure Trainer.Train. The zero value means one epoch,
// Example.Answer as the target, no progress lines.
type Options struct {
	// Steps is the number of optimizer steps; 0 means Epochs passes.
	Steps int
	// Epochs is the number of passes over the data when Steps is 0;
	// default 1. Each pass visits the examples in a new random order
	// (seeded by Config.Seed); a step holds Config.BatchSize examples.
	Epochs int
	// Target returns the completion to learn for an example; nil means
	// its Answer.
	Target func(dataset.Example) string
	// Progress, if not nil, receives a line every LoggingSteps steps (and
	// after the last) with the mean loss since the previous line.
	Progress io.Writer
	// LoggingSteps is the steps between progress lines; default 10.
	LoggingSteps int
	// Logger receives the trainer's warnings (targets cut by
	// Config.MaxCompletionLength, so that their end and EOS are not
	// learned) and the Go memory limit set; nil means slog.Default().
	Logger *slog.Logger
	// Memory is the budget the run's memory plan is checked against
	// before the first step, for a policy that can describe its memory
	// (a grpo.MemoryPlanner, as grpo.LMPolicy): nil means
	// memplan.Available(); a Budget with Off set prints the plan (to
	// Progress) without stopping. A run over budget returns a
	// *memplan.OutOfMemoryError naming the settings to lower.
	Memory *memplan.Budget
	// GCLimit gives Go's garbage collector the plan's peak as its memory
	// limit for the run (memplan.LimitGC, raised if the run needs more)
	// and restores the previous limit when it ends. Without it a step's
	// freed activations let the heap grow to about twice what it holds.
	// The limit is process-wide, so it is off by default; GOMEMLIMIT or a
	// limit the program set wins.
	GCLimit bool
}

// logger returns Logger, or slog.Default().
func (o Options) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.Default()
	}
	return o.Logger
}

// Train runs supervised fine-tuning on data: Steps steps (or Epochs passes)
// of Config.BatchSize examples, the learning rate following Config's
// schedule over the whole run. The policy must implement Encoder. It
// returns the mean loss of the last logging window, and context.Cause(ctx)
// when ctx ends first.
func (s *Trainer) Train(ctx context.Context, data dataset.Dataset, opts Options) (float64, error) {
	enc, ok := s.policy.(Encoder)
	if !ok {
		return 0, fmt.Errorf("sft: policy %T cannot encode examples (no Encoder)", s.policy)
	}
	if data == nil || data.Len() == 0 {
		return 0, errors.New("sft: empty dataset")
	}
	rows := make([]Pair, data.Len())
	for i := range rows {
		ex, err := data.Example(i)
		if err != nil {
			return 0, fmt.Errorf("sft: example %d: %w", i, err)
		}
		target := ex.Answer
		if opts.Target != nil {
			target = opts.Target(ex)
		}
		p, err := enc.PromptIDs(ex, s.cfg.MaxPromptLength)
		if err != nil {
			return 0, fmt.Errorf("sft: example %d: %w", i, err)
		}
		c, err := enc.TargetIDs(target)
		if err != nil {
			return 0, fmt.Errorf("sft: example %d: %w", i, err)
		}
		rows[i] = Pair{PromptIDs: toInt32(p), CompletionIDs: toInt32(c)}
	}
	return s.TrainPairs(ctx, rows, opts)
}

// TrainPairs is Train on token pairs (Options.Target is not used): Steps
// steps (or Epochs passes) of Config.BatchSize pairs, a Pair's Mask
// keeping its masked tokens out of the loss. Demonstrations of tool use
// come as pairs through FromTrajectory.
func (s *Trainer) TrainPairs(ctx context.Context, rows []Pair, opts Options) (float64, error) {
	if len(rows) == 0 {
		return 0, errors.New("sft: no examples")
	}
	n, batch := len(rows), s.cfg.BatchSize
	total := opts.Steps
	if total <= 0 {
		total = (max(1, opts.Epochs)*n + batch - 1) / batch
	}
	cut, firstCut := 0, -1
	for i, r := range rows {
		if len(r.CompletionIDs) > s.cfg.MaxCompletionLength {
			if cut++; firstCut < 0 {
				firstCut = i
			}
		}
	}
	if cut > 0 {
		opts.logger().Warn("sft: targets longer than max_completion_length are cut: their end and EOS are not learned (raise max_completion_length)",
			"examples", cut, "of", n, "max_completion_length", s.cfg.MaxCompletionLength,
			"first", firstCut, "tokens", len(rows[firstCut].CompletionIDs))
	}
	limit, err := s.planMemory(rows, opts)
	if err != nil {
		return 0, err
	}
	defer limit.Restore()
	rng := rand.New(rand.NewPCG(uint64(s.cfg.Seed), 0x5f7))
	var order []int
	logEvery := max(1, opts.LoggingSteps)
	if opts.LoggingSteps == 0 {
		logEvery = 10
	}
	start := time.Now()
	mb := make([]Pair, batch)
	sum, count, last := 0.0, 0, 0.0
	for step := 1; step <= total; step++ {
		for i := range mb {
			if len(order) == 0 {
				order = rng.Perm(n)
			}
			mb[i], order = rows[order[0]], order[1:]
		}
		loss, err := s.Step(ctx, mb, total)
		if err != nil {
			return last, err
		}
		sum, count = sum+loss, count+1
		if step%logEvery == 0 || step == total {
			last = sum / float64(count)
			if opts.Progress != nil {
				fmt.Fprintf(opts.Progress, "sft step %d/%d | loss %.3f (mean of last %d) | %.2fs/step\n",
					step, total, last, count, time.Since(start).Seconds()/float64(step))
			}
			limit.Report(opts.Logger)
			sum, count = 0, 0
		}
	}
	return last, nil
}

// Release deletes the variables that this trainer added to the policy's
// context (its AdamW moments, step count and learning-rate variable), so
// that a GRPO Trainer made afterwards starts its optimizer afresh and its
// checkpoints do not carry them. Do not call Step or Train afterwards.
func (s *Trainer) Release() error {
	mctx := s.policy.Context()
	var added []*mlctx.Variable
	for v := range mctx.IterVariables() {
		if !s.before[v] {
			added = append(added, v)
		}
	}
	var errs []error
	for _, v := range added {
		if err := mctx.DeleteVariable(v.Scope(), v.Name()); err != nil {
			errs = append(errs, fmt.Errorf("sft release: %w", err))
		}
	}
	return errors.Join(errs...)
}

func toInt32(xs []int) []int32 {
	out := make([]int32, len(xs))
	for i, x := range xs {
		out[i] = int32(x)
	}
	return out
}

var _ Encoder = (*grpo.LMPolicy)(nil)

// FromTrajectory is the pair that learns trajectory t (for example an
// agent.Renderer.Demonstration): its prompt as context, its completion as
// the target, the tokens a tool or the template inserted (Mask 0) kept out
// of the loss.
func FromTrajectory(t agent.Trajectory) Pair {
	return Pair{PromptIDs: toInt32(t.PromptIDs), CompletionIDs: toInt32(t.IDs), Mask: slices.Clone(t.Mask)}
}
