package sft

import (
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/memplan"
)

// planMemory prints the memory plan of training on rows (memplan.Estimate
// of a training pass alone: Config.BatchSize rows padded as pack pads the
// longest prompt and target) to opts.Progress, checks it against
// opts.Memory (nil: memplan.Available()) and, with opts.GCLimit, sets Go's
// memory limit for the run (memplan.LimitGC). A policy that cannot describe
// its memory (not a grpo.MemoryPlanner) trains without a plan: nil, nil.
func (s *Trainer) planMemory(rows []Pair, opts Options) (*memplan.GCLimit, error) {
	mp, ok := s.policy.(grpo.MemoryPlanner)
	if !ok {
		return nil, nil
	}
	p, c := 1, 1
	for _, r := range rows {
		p, c = max(p, len(r.PromptIDs)), max(c, len(r.CompletionIDs))
	}
	if s.cfg.MaxPromptLength > 0 {
		p = min(p, s.cfg.MaxPromptLength)
	}
	req := mp.MemoryRequest(grpo.Config{}, p)
	req.Train = memplan.Training{
		BatchSize:             bucket(s.cfg.BatchSize, 0),
		MaxPromptLength:       s.cfg.MaxPromptLength,
		MaxCompletionLength:   bucket(min(c, s.cfg.MaxCompletionLength), s.cfg.MaxCompletionLength),
		GradientCheckpointing: s.cfg.GradientCheckpointing,
		Phases:                memplan.TrainOnly,
	}
	plan, err := memplan.Estimate(req)
	if err != nil {
		opts.logger().Warn("sft: no memory plan for this model; training without the check", "err", err)
		return nil, nil
	}
	budget := memplan.Available()
	if opts.Memory != nil {
		budget = *opts.Memory
	}
	return memplan.Enforce(opts.Progress, opts.logger(), plan, budget, opts.GCLimit)
}
