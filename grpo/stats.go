package grpo

import "github.com/grpokit/grpokit/loss"

// stepStats accumulates the training graph's statistics vectors (see
// statKL) over the micro-batches of one optimizer step.
type stepStats [numStats]float64

// newStepStats returns empty statistics.
func newStepStats() *stepStats {
	var s stepStats
	s[statLowMin], s[statHighMax] = 2, -1
	return &s
}

// add folds one micro-batch's vector in: sums, except the row minimum and
// maximum.
func (s *stepStats) add(v []float32) {
	for i := range s {
		x := float64(v[i])
		switch i {
		case statLowMin:
			s[i] = min(s[i], x)
		case statHighMax:
			s[i] = max(s[i], x)
		default:
			s[i] += x
		}
	}
}

// metrics writes the loss metrics TRL 1.16 logs for cfg's loss type into m:
// kl (Beta ≠ 0), entropy, the clip ratios (clipped loss types),
// cispo_clip_ratio, vespo/phi_seq_mean, and policy_loss with entropy_coef
// when the entropy bonus is on.
func (s *stepStats) metrics(m Metrics, cfg Config, entropyCoef float64) {
	tok := max(1, s[statTokens])
	if cfg.Beta != 0 {
		m["kl"] = s[statKL] / tok
	}
	m["entropy"] = s[statEntropy] / tok
	switch {
	case cfg.LossType.Clipped():
		n := max(1, s[statClipCount])
		m["clip_ratio/low_mean"] = s[statLowClip] / n
		m["clip_ratio/high_mean"] = s[statHighClip] / n
		m["clip_ratio/region_mean"] = s[statRegionClip] / n
		m["clip_ratio/low_min"] = 0
		if s[statLowMin] <= 1 {
			m["clip_ratio/low_min"] = s[statLowMin]
		}
		m["clip_ratio/high_max"] = max(0, s[statHighMax])
	case cfg.LossType == loss.CISPO:
		m["cispo_clip_ratio"] = s[statCISPOClip] / tok
	case cfg.LossType == loss.VESPO:
		m["vespo/phi_seq_mean"] = s[statPhi] / max(1, s[statRows])
	}
	if cfg.EntropyCoef != 0 || cfg.UseAdaptiveEntropy {
		m["policy_loss"] = s[statPolicyLoss]
		m["entropy_coef"] = entropyCoef
	}
}

// bonusEntropy is the step's mean token entropy over the tokens the
// entropy bonus covers (the loss tokens, entropy-masked): what adaptive
// entropy control measures.
func (s *stepStats) bonusEntropy() float64 {
	return s[statBonusEntropy] / max(1, s[statBonusTokens])
}
