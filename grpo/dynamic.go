package grpo

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/loss"
)

// dynamicDraws counts what dynamic sampling did for one rollout batch.
type dynamicDraws struct {
	drawn   int // prompts generated, the first draw included
	dropped int // groups left out for zero reward spread
	rounds  int // extra generation rounds
}

// informative reports whether a group's weighted rewards differ (its
// advantages are not all zero): over the rows some reward applied to, of
// which it needs two.
func informative(group []*row) bool {
	r := make([]float64, len(group))
	for i, x := range group {
		r[i] = x.Reward
		if unscored(x.Rewards) {
			r[i] = math.NaN()
		}
	}
	_, std := loss.NanMeanStd(r)
	return !math.IsNaN(std) && !loss.ZeroStd(std)
}

// dynamicSample is DAPO's dynamic sampling: it keeps the informative groups
// of rows (groups of G with reward spread) and, while fewer than n are kept
// and fewer than Config.DynamicSamplingMaxRounds extra rounds were drawn,
// generates groups for more prompts with draw(round, need). If the rounds
// run out, the batch is topped up with dropped groups (zero advantage, as
// without dynamic sampling) so that it keeps its size.
func (t *Trainer) dynamicSample(rows []*row, n int, draw func(round, need int) ([]*row, error), st *dynamicDraws) ([]*row, error) {
	g := t.cfg.NumGenerations
	var kept, dropped []*row
	sort := func(rows []*row) {
		for i := 0; i+g <= len(rows); i += g {
			group := rows[i : i+g]
			if informative(group) {
				kept = append(kept, group...)
			} else {
				dropped = append(dropped, group...)
				st.dropped++
			}
		}
	}
	st.drawn += len(rows) / g
	sort(rows)
	for round := 1; len(kept) < n*g && round <= t.cfg.DynamicSamplingMaxRounds; round++ {
		need := n - len(kept)/g
		more, err := draw(round, need)
		if err != nil {
			return nil, err
		}
		st.rounds++
		st.drawn += len(more) / g
		sort(more)
	}
	if len(kept) > n*g {
		kept = kept[:n*g]
	}
	for i := 0; len(kept) < n*g && i+g <= len(dropped); i += g {
		kept = append(kept, dropped[i:i+g]...)
	}
	return kept, nil
}

// extraPrompts draws need examples for dynamic-sampling round of rollout
// batch k, uniformly at random with a seed fixed by Config.Seed, k and the
// round (so a resumed run draws the same).
func (s *datasetSource) extraPrompts(t *Trainer, k, round, need int) ([]dataset.Example, []int, error) {
	r := rand.New(rand.NewPCG(t.seed(k, 0), uint64(round)<<32|0xd5a))
	prompts := make([]dataset.Example, need)
	ids := make([]int, need)
	for j := range prompts {
		ids[j] = r.IntN(s.data.Len())
		ex, err := s.data.Example(ids[j])
		if err != nil {
			return nil, nil, fmt.Errorf("grpo: dataset example %d: %w", ids[j], err)
		}
		prompts[j] = ex
	}
	return prompts, ids, nil
}

// refill applies dynamic sampling to the first draw of rollout batch k.
func (s *datasetSource) refill(ctx context.Context, t *Trainer, k int, rows []*row, tally *rewardTally) ([]*row, error) {
	n := t.cfg.PromptsPerGeneration()
	return t.dynamicSample(rows, n, func(round, need int) ([]*row, error) {
		prompts, ids, err := s.extraPrompts(t, k, round, need)
		if err != nil {
			return nil, err
		}
		return t.generateAndScore(ctx, prompts, 0, ids, t.seed(k, -1-round), tally)
	}, &tally.dynamic)
}
