package grpo

import (
	"errors"
	"fmt"
	"math"

	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/reward"
)

// TokenScorer gives each token of a completion a reward of its own, for
// token-level credit (see TokenCredit). ScoreTokens returns one value per
// completion token (len(ids) values, ids being the completion's token ids
// as generated); NaN marks a token it does not score (a format token, say),
// which then gets the sequence advantage alone. It must be safe for
// concurrent use.
type TokenScorer interface {
	ScoreTokens(s reward.Sample, ids []int32) ([]float64, error)
}

// TokenScorerFunc lets a plain function be a TokenScorer.
type TokenScorerFunc func(s reward.Sample, ids []int32) ([]float64, error)

// ScoreTokens returns f(s, ids).
func (f TokenScorerFunc) ScoreTokens(s reward.Sample, ids []int32) ([]float64, error) {
	return f(s, ids)
}

// TokenCredit adds token-level credit to the sequence advantages: a
// per-token reward whose group-normalized value is added to the advantage
// of the token it scores. GRPO's advantage is one number per completion,
// so a completion that is right in four tokens and wrong in one is pushed
// down in all five; with a TokenScorer that knows which token was wrong,
// the four right ones are pushed up less (or not at all) and the wrong one
// down more. This is process supervision at the token level (DeepSeekMath,
// Shao et al. 2024, §4.1.3, normalizes step rewards over the group the same
// way, and gives a token the sum of its following steps' rewards; here a
// token gets its own reward only, the credit for the choice it made). TRL
// has no such setting. With r_{i,t} the token reward (NaN: not scored) of
// token t of completion i, A_i the sequence advantage (RewardAdvantages)
// and w the Weight:
//
//	A_{i,t} = A_i + w·(r_{i,t} − μ)/(σ + AdvantageEps)   (scored tokens)
//	A_{i,t} = A_i                                        (unscored tokens)
//
// where μ is the mean of the scored token rewards of completion i's group
// and σ their unbiased std (Config.ScaleRewards group), or the std of all
// the generation batch's scored token rewards (batch); scale none leaves
// out the division. A group with fewer than two scored tokens adds
// nothing. The loss is then built with [B, C] advantages instead of [B];
// without TokenCredit nothing changes. DropZeroStdGroups and dynamic
// sampling still judge a group by its sequence rewards.
type TokenCredit struct {
	// Name is the metric prefix: token_credit/<Name>/mean and /std are the
	// raw scored token rewards, token_credit/<Name>/frac_group_zero_std the
	// groups whose scored tokens all tie.
	Name   string
	Weight float64
	Scorer TokenScorer
}

// SetTokenCredit turns on token-level credit for the following steps (see
// TokenCredit). Call it before Train, TrainEnv or Resume, with the same
// setting as the run that wrote the checkpoint.
func (t *Trainer) SetTokenCredit(c TokenCredit) error {
	if c.Scorer == nil {
		return errors.New("grpo: SetTokenCredit: nil Scorer")
	}
	if math.IsNaN(c.Weight) || math.IsInf(c.Weight, 0) {
		return fmt.Errorf("grpo: SetTokenCredit: weight %v is not finite", c.Weight)
	}
	if c.Name == "" {
		c.Name = "token"
	}
	t.tokenCredit = &c
	return nil
}

// scoreTokens fills the token rewards of rows (one completion per sample)
// when token credit is on.
func (t *Trainer) scoreTokens(samples []reward.Sample, rows []*row) error {
	if t.tokenCredit == nil {
		return nil
	}
	for i, r := range rows {
		v, err := t.tokenCredit.Scorer.ScoreTokens(samples[i], r.IDs)
		if err != nil {
			return fmt.Errorf("grpo: token credit %q: completion %d: %w", t.tokenCredit.Name, i, err)
		}
		if len(v) != len(r.IDs) {
			return fmt.Errorf("grpo: token credit %q: completion %d: %d rewards for %d tokens", t.tokenCredit.Name, i, len(v), len(r.IDs))
		}
		for j, x := range v {
			if math.IsInf(x, 0) {
				return fmt.Errorf("grpo: token credit %q: completion %d: token %d's reward is %v", t.tokenCredit.Name, i, j, x)
			}
		}
		r.TokenRewards = v
	}
	return nil
}

// applyTokenCredit sets the token advantages of rows (in groups of G) and
// logs the token rewards in m; nothing without token credit.
func (t *Trainer) applyTokenCredit(rows []*row, m map[string]float64) error {
	c := t.tokenCredit
	if c == nil {
		return nil
	}
	rewards := make([][]float64, len(rows))
	for i, r := range rows {
		rewards[i] = r.TokenRewards
	}
	adv, zero, err := loss.TokenAdvantages(rewards, c.Weight, t.cfg.NumGenerations, t.cfg.ScaleRewards)
	if err != nil {
		return err
	}
	for i, r := range rows {
		r.TokenAdv = adv[i]
	}
	mean, std := loss.MeanStd(loss.ScoredRewards(rewards))
	nz := 0
	for _, z := range zero {
		if z {
			nz++
		}
	}
	p := "token_credit/" + c.Name + "/"
	m[p+"mean"], m[p+"std"] = mean, std
	m[p+"frac_group_zero_std"] = float64(nz) / float64(max(1, len(zero)))
	return nil
}

// setTokenAdvantages replaces mb's [B] advantages by [B, C] ones: each
// row's sequence advantage plus its tokens' credit (padding gets the
// sequence advantage; its loss mask is 0). rows are mb's rows in order.
func (mb *microBatch) setTokenAdvantages(rows []*row) {
	adv := make([]float32, mb.B*mb.C)
	for b := range rows {
		r := rows[b]
		for i := 0; i < mb.C; i++ {
			a := r.Advantage
			if i < len(r.TokenAdv) {
				a += r.TokenAdv[i]
			}
			adv[b*mb.C+i] = float32(a)
		}
	}
	mb.Adv, mb.TokenAdv = adv, true
}

// tokenSignal reports whether the token credit gave step m's groups a
// learning signal (some group's scored tokens differ): the sequence
// rewards may then all tie without the step being empty.
func (t *Trainer) tokenSignal(m Metrics) bool {
	if t.tokenCredit == nil {
		return false
	}
	z, ok := m["token_credit/"+t.tokenCredit.Name+"/frac_group_zero_std"]
	return ok && z < 1
}
