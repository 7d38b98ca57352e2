package grpo

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/reward"
)

// rolloutBatch is one generation batch: its rows, packed micro-batches and
// the rollout metrics. It is reused for NumIterations optimizer steps and
// saved in checkpoints taken in between.
type rolloutBatch struct {
	Index   int
	Rows    []*row
	Micro   []*microBatch
	Metrics map[string]float64 // keys starting with '_' are internal
}

// source yields the scored rows of rollout batch k, in groups of G.
type source interface {
	rollouts(ctx context.Context, t *Trainer, k int, tally *rewardTally) ([]*row, error)
}

// rewardTally counts reward failures over a rollout batch and times its
// generation and reward scoring.
type rewardTally struct {
	failures         []int
	stray            []int // calls still running past their timeout after the last scoring
	generate, reward time.Duration
	dynamic          dynamicDraws
	// tool calls, failed calls and model turns of trajectories (SetTools)
	toolCalls, toolFailures, turns int
}

// generateOptions returns the sampling options for a seed.
func (t *Trainer) generateOptions(seed uint64) GenerateOptions {
	return GenerateOptions{
		MaxPromptLength:     t.cfg.MaxPromptLength,
		MaxCompletionLength: t.cfg.MaxCompletionLength,
		MinCompletionLength: t.cfg.MinCompletionLength,
		Sampling:            t.cfg.Sampling,
		Seed:                seed,
	}
}

// generateAndScore samples G completions of each prompt and scores them.
func (t *Trainer) generateAndScore(ctx context.Context, prompts []dataset.Example, turn int, episodes []int, seed uint64, tally *rewardTally) ([]*row, error) {
	rows, samples, err := t.generate(ctx, prompts, turn, episodes, seed, tally)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	res, err := t.eval.Evaluate(ctx, samples)
	tally.reward += time.Since(start)
	if err != nil {
		return nil, err
	}
	if tally.failures == nil {
		tally.failures = make([]int, len(t.rewards))
		tally.stray = make([]int, len(t.rewards))
	}
	if err := t.scoreTokens(samples, rows); err != nil {
		return nil, err
	}
	for r, st := range res.Stats {
		tally.failures[r] += st.Failures()
		tally.stray[r] = st.Stray
	}
	for i, rw := range rows {
		rw.Reward = res.Totals[i]
		rw.Rewards = make([]float64, len(t.rewards))
		for r := range t.rewards {
			rw.Rewards[r] = res.Scores[r][i]
		}
	}
	return rows, nil
}

// generate samples G completions of each prompt (with tools, G
// trajectories) and returns their rows and reward samples.
func (t *Trainer) generate(ctx context.Context, prompts []dataset.Example, turn int, episodes []int, seed uint64, tally *rewardTally) ([]*row, []reward.Sample, error) {
	g := t.cfg.NumGenerations
	start := time.Now()
	defer func() { tally.generate += time.Since(start) }()
	if t.tools != nil {
		return t.trajectories(ctx, prompts, turn, episodes, seed, tally)
	}
	comps, err := t.policy.Generate(ctx, prompts, g, t.generateOptions(seed))
	if err != nil {
		return nil, nil, fmt.Errorf("grpo: generate: %w", err)
	}
	if len(comps) != len(prompts)*g {
		return nil, nil, fmt.Errorf("grpo: generate returned %d completions for %d prompts × %d", len(comps), len(prompts), g)
	}
	samples := make([]reward.Sample, len(comps))
	rows := make([]*row, len(comps))
	for i, c := range comps {
		ex := prompts[i/g]
		if len(c.IDs) == 0 {
			return nil, nil, fmt.Errorf("grpo: generate returned an empty completion (%d of prompt %d)", i%g, i/g)
		}
		samples[i] = reward.Sample{Prompt: ex.Text(), Completion: c.Text, Answer: ex.Answer, Turn: turn, Meta: ex.Meta, CompletionIDs: c.IDs,
			Messages: rewardMessages(ex.Messages)}
		rows[i] = &row{
			Prompt: ex.Text(), Completion: c.Text, Answer: ex.Answer, Turn: turn, Episode: episodes[i/g],
			Truncated: c.Truncated, PromptIDs: c.PromptIDs, IDs: c.IDs,
		}
	}
	return rows, samples, nil
}

// datasetSource draws PromptsPerGeneration examples per rollout batch.
type datasetSource struct{ data dataset.Dataset }

// size is the number of examples, for the epoch metric.
func (s *datasetSource) size() int { return s.data.Len() }

func (s *datasetSource) rollouts(ctx context.Context, t *Trainer, k int, tally *rewardTally) ([]*row, error) {
	n := t.cfg.PromptsPerGeneration()
	prompts := make([]dataset.Example, n)
	ids := make([]int, n)
	for j := range prompts {
		ids[j] = t.exampleIndex(k*n+j, s.data.Len())
		ex, err := s.data.Example(ids[j])
		if err != nil {
			return nil, fmt.Errorf("grpo: dataset example %d: %w", ids[j], err)
		}
		prompts[j] = ex
	}
	rows, err := t.generateAndScore(ctx, prompts, 0, ids, t.seed(k, 0), tally)
	if err != nil || !t.cfg.DynamicSampling {
		return rows, err
	}
	return s.refill(ctx, t, k, rows, tally)
}

// envSource plays PromptsPerGeneration episodes per rollout batch in lockstep.
type envSource struct{ env Env }

func (s *envSource) rollouts(ctx context.Context, t *Trainer, k int, tally *rewardTally) ([]*row, error) {
	n, g := t.cfg.PromptsPerGeneration(), t.cfg.NumGenerations
	eps := make([]Episode, n)
	active := make([]int, n)
	for j := range eps {
		ep, err := s.env.Episode(k*n + j)
		if err != nil {
			return nil, fmt.Errorf("grpo: env episode %d: %w", k*n+j, err)
		}
		eps[j], active[j] = ep, j
	}
	var rows []*row
	for turn := 0; turn < t.cfg.MaxTurns && len(active) > 0; turn++ {
		prompts := make([]dataset.Example, len(active))
		ids := make([]int, len(active))
		for a, j := range active {
			prompts[a], ids[a] = eps[j].Observe(), k*n+j
		}
		turnRows, err := t.generateAndScore(ctx, prompts, turn, ids, t.seed(k, turn), tally)
		if err != nil {
			return nil, err
		}
		rows = append(rows, turnRows...)
		pick := rand.New(rand.NewPCG(t.seed(k, turn), 0x5eed))
		var still []int
		for a, j := range active {
			group := turnRows[a*g : (a+1)*g]
			chosen := pick.IntN(g)
			if t.cfg.EpisodeSelect == SelectBest {
				chosen = 0
				for i, r := range group {
					if r.Reward > group[chosen].Reward {
						chosen = i
					}
				}
			}
			done, err := eps[j].Step(group[chosen].Completion)
			if err != nil {
				return nil, fmt.Errorf("grpo: env episode %d turn %d: %w", k*n+j, turn, err)
			}
			if !done {
				still = append(still, j)
			}
		}
		active = still
	}
	return rows, nil
}

// makeRollouts generates, scores and packs rollout batch k.
func (t *Trainer) makeRollouts(ctx context.Context, src source, k int) (*rolloutBatch, error) {
	var tally rewardTally
	rows, err := src.rollouts(ctx, t, k, &tally)
	if err != nil {
		return nil, err
	}
	t.warnUnscored(rows)
	g := t.cfg.NumGenerations
	adv, err := t.advantages(rows)
	if err != nil {
		return nil, err
	}
	for i, r := range rows {
		r.Advantage = adv.Values[i]
		r.Dropped = t.cfg.DropZeroStdGroups && adv.ZeroStd[i/g]
	}
	buf := &rolloutBatch{Index: k, Rows: rows, Metrics: rolloutMetrics(t, rows, adv, tally)}
	if err := t.applyTokenCredit(rows, buf.Metrics); err != nil {
		return nil, err
	}

	bs := t.cfg.BatchSize
	packed := t.shuffleGeneration(k, rows)
	var microRows []int // loss rows of each micro-batch
	for start := 0; start < len(packed); start += bs {
		part := packed[start:min(start+bs, len(packed))]
		mb := packRows(part, bs, t.cfg.MaxPromptLength, t.cfg.MaxCompletionLength, t.cfg.MaskTruncatedCompletions)
		if t.cfg.SharePrompts {
			mb.Group = sharedGroup(part, t.cfg.NumGenerations, bs)
		}
		buf.Micro = append(buf.Micro, mb)
		if t.tokenCredit != nil {
			buf.Micro[len(buf.Micro)-1].setTokenAdvantages(part)
		}
		n := 0
		for _, r := range part {
			if !r.Dropped {
				n++
			}
		}
		microRows = append(microRows, n)
	}
	// Generation-batch normalizers: TRL's num_items_in_batch and padded width.
	norm := loss.StepNormalizers{MaxCompletionLength: t.cfg.MaxCompletionLength}
	for _, r := range rows {
		norm.Columns = max(norm.Columns, len(r.IDs)) // TRL pads to the longest completion
	}
	for _, mb := range buf.Micro {
		norm.Tokens += mb.tokens()
	}
	steps := t.stepNormalizers(buf, microRows, norm)
	start := time.Now()
	for i, mb := range buf.Micro {
		mb.setWeights(t.cfg.LossType, steps[i])
		if t.withOld() {
			if mb.Old, err = t.logProbs(t.oldExec, mb); err != nil {
				return nil, fmt.Errorf("grpo: old log-probs: %w", err)
			}
		}
		if t.withRef() {
			if mb.Ref, err = t.logProbs(t.refExec, mb); err != nil {
				return nil, fmt.Errorf("grpo: reference log-probs: %w", err)
			}
		}
	}
	buf.Metrics["_timing/logprobs"] = time.Since(start).Seconds()
	return buf, nil
}

// advantages computes the advantages of rows (in groups of G) from their
// per-reward scores, with the trainer's reward weights.
func (t *Trainer) advantages(rows []*row) (loss.Advantages, error) {
	scores := make([][]float64, len(rows))
	for i, r := range rows {
		scores[i] = r.Rewards
	}
	weights := make([]float64, len(t.rewards))
	for i, r := range t.rewards {
		weights[i] = r.Weight
	}
	return loss.RewardAdvantages(scores, weights, t.cfg.NumGenerations, t.cfg.ScaleRewards, t.cfg.MultiObjectiveAggregation)
}

// logProbs runs a log-probs graph on a micro-batch.
func (t *Trainer) logProbs(exec interface {
	Exec(args ...any) ([]*tensors.Tensor, error)
}, mb *microBatch) ([]float32, error) {
	outs, err := exec.Exec(mb.withGroup(mb.withAllowed(mb.logitsInputs(), t.constraint))...)
	if err != nil {
		return nil, err
	}
	return tensors.MustCopyFlatData[float32](outs[0]), nil
}

// rolloutMetrics computes TRL's reward and completion metrics of a batch.
func rolloutMetrics(t *Trainer, rows []*row, adv loss.Advantages, tally rewardTally) map[string]float64 {
	m := map[string]float64{}
	n := float64(len(rows))
	totals := make([]float64, len(rows))
	var stepTokens float64
	minLen, maxLen, sumLen := math.Inf(1), 0.0, 0.0
	minTerm, maxTerm, sumTerm, nTerm, truncated := math.Inf(1), 0.0, 0.0, 0.0, 0.0
	for i, r := range rows {
		totals[i] = r.Reward
		if unscored(r.Rewards) {
			totals[i] = math.NaN() // out of reward and reward_std, as TRL
		}
		stepTokens += float64(len(r.IDs) + len(r.PromptIDs))
		l := float64(r.modelTokens()) // as TRL: a trajectory's inserted tokens are not its length
		minLen, maxLen, sumLen = min(minLen, l), max(maxLen, l), sumLen+l
		if r.Truncated {
			truncated++
		} else {
			minTerm, maxTerm, sumTerm, nTerm = min(minTerm, l), max(maxTerm, l), sumTerm+l, nTerm+1
		}
	}
	for ri, nr := range t.rewards {
		// Over the rows the reward applied to (TRL's nanmean, nanstd).
		col := make([]float64, 0, len(rows))
		for _, r := range rows {
			if v := r.Rewards[ri]; !reward.IsNotApplicable(v) {
				col = append(col, v)
			}
		}
		mean, std := loss.MeanStd(col)
		if len(col) == 0 {
			mean, std = math.NaN(), math.NaN()
		}
		m["rewards/"+nr.Name+"/mean"] = mean
		m["rewards/"+nr.Name+"/std"] = std
		if len(tally.failures) > ri {
			m["rewards/"+nr.Name+"/failures"] = float64(tally.failures[ri])
			m["rewards/"+nr.Name+"/stray"] = float64(tally.stray[ri])
		}
	}
	mean, std := loss.NanMeanStd(totals)
	m["reward"] = mean
	m["reward_std"] = std // TRL 1.16: over all scored rows (v0.21.0: mean of the group stds)
	m["frac_reward_zero_std"] = adv.FracZeroStd()
	m["frac_group_zero_std"] = adv.FracGroupsZeroStd()
	m["completions/mean_length"] = sumLen / n
	m["completions/min_length"] = minLen
	m["completions/max_length"] = maxLen
	m["completions/clipped_ratio"] = truncated / n
	if nTerm > 0 {
		m["completions/mean_terminated_length"] = sumTerm / nTerm
		m["completions/min_terminated_length"] = minTerm
		m["completions/max_terminated_length"] = maxTerm
	} else {
		m["completions/mean_terminated_length"] = 0
		m["completions/min_terminated_length"] = 0
		m["completions/max_terminated_length"] = 0
	}
	m["rollouts"] = n
	if t.tools != nil {
		m["tools/call_frequency"] = float64(tally.toolCalls) / n
		m["tools/failure_frequency"] = 0
		if tally.toolCalls > 0 {
			m["tools/failure_frequency"] = float64(tally.toolFailures) / float64(tally.toolCalls)
		}
		m["tools/turns_per_trajectory"] = float64(tally.turns) / n
	}
	if t.cfg.DynamicSampling {
		m["dynamic_sampling/groups_drawn"] = float64(tally.dynamic.drawn)
		m["dynamic_sampling/groups_dropped"] = float64(tally.dynamic.dropped)
		m["dynamic_sampling/rounds"] = float64(tally.dynamic.rounds)
	}
	m["_step_tokens"] = stepTokens
	m["_timing/generate"] = tally.generate.Seconds()
	m["_timing/reward"] = tally.reward.Seconds()
	return m
}

// rewardMessages gives rewards a conversational prompt's messages (a
// reward model renders them with its own chat template); nil for a plain
// prompt.
func rewardMessages(ms []dataset.Message) []reward.Message {
	if len(ms) == 0 {
		return nil
	}
	out := make([]reward.Message, len(ms))
	for i, m := range ms {
		out[i] = reward.Message{Role: m.Role, Content: m.Content}
	}
	return out
}

// warnUnscored warns, once per generation batch, of the rows to which no
// reward applied (each returned reward.NotApplicable), as TRL warns when
// all reward functions return None for a sample: their count, and the
// prompt and completion of the first.
func (t *Trainer) warnUnscored(rows []*row) {
	n, first := 0, -1
	for i, r := range rows {
		if unscored(r.Rewards) {
			if n++; first < 0 {
				first = i
			}
		}
	}
	if n == 0 {
		return
	}
	t.logger().Warn("grpo: no reward applied to some completions (every reward returned reward.NotApplicable); make sure at least one reward scores each sample",
		"step", t.step+1, "rows", n, "of", len(rows),
		"prompt", clip(rows[first].Prompt, 200), "completion", clip(rows[first].Completion, 200))
}

// unscored reports whether no reward applied to a row.
func unscored(rewards []float64) bool {
	for _, v := range rewards {
		if !reward.IsNotApplicable(v) {
			return false
		}
	}
	return len(rewards) > 0
}

// clip returns s cut to about n characters, with "…" where it was cut.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}
