package grpo

import "github.com/grpokit/grpokit/loss"

// stepStats accumulates the training graph's statistics vectors (see
// statKL) over the micro-batches of one optimizer step. TRL logs each loss
// metric once per micro-batch (from that micro-batch alone) and reports
// their mean, so the step's metrics are the mean over its micro-batches of
// each micro-batch's value; sums keeps the step-wide totals.
type stepStats struct {
	sums  [numStats]float64
	micro map[string]float64 // Σ over micro-batches of each one's metric
	n     int                // micro-batches with a loss token
}

// newStepStats returns empty statistics.
func newStepStats() *stepStats {
	return &stepStats{micro: map[string]float64{}}
}

// add folds one micro-batch's vector in.
func (s *stepStats) add(v []float32) {
	var x [numStats]float64
	for i := range x {
		x[i] = float64(v[i])
		s.sums[i] += x[i]
	}
	if x[statTokens] == 0 {
		return // padding only: no metric (TRL's NaN, which its log skips)
	}
	s.n++
	tok := x[statTokens]
	clip := max(1, x[statClipCount])
	lowMin := 0.0
	if x[statLowMin] <= 1 {
		lowMin = x[statLowMin]
	}
	for k, val := range map[string]float64{
		"kl": x[statKL] / tok, "entropy": x[statEntropy] / tok,
		"clip_ratio/low_mean": x[statLowClip] / clip, "clip_ratio/high_mean": x[statHighClip] / clip,
		"clip_ratio/region_mean": x[statRegionClip] / clip,
		"clip_ratio/low_min":     lowMin, "clip_ratio/high_max": max(0, x[statHighMax]),
		"cispo_clip_ratio": x[statCISPOClip] / tok, "vespo/phi_seq_mean": x[statPhi] / max(1, x[statRows]),
	} {
		s.micro[k] += val
	}
}

// metrics writes the loss metrics TRL 1.16 logs for cfg's loss type into m:
// kl (Beta ≠ 0), entropy, the clip ratios (clipped loss types),
// cispo_clip_ratio, vespo/phi_seq_mean, and policy_loss with entropy_coef
// when the entropy bonus is on; each the mean over the step's
// micro-batches of that micro-batch's value, as TRL logs them.
func (s *stepStats) metrics(m Metrics, cfg Config, entropyCoef float64) {
	n := float64(max(1, s.n))
	mean := func(k string) float64 { return s.micro[k] / n }
	if cfg.Beta != 0 {
		m["kl"] = mean("kl")
	}
	m["entropy"] = mean("entropy")
	switch {
	case cfg.LossType.Clipped():
		for _, k := range []string{"clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean", "clip_ratio/low_min", "clip_ratio/high_max"} {
			m[k] = mean(k)
		}
	case cfg.LossType == loss.CISPO:
		m["cispo_clip_ratio"] = mean("cispo_clip_ratio")
	case cfg.LossType == loss.VESPO:
		m["vespo/phi_seq_mean"] = mean("vespo/phi_seq_mean")
	}
	if cfg.EntropyCoef != 0 || cfg.UseAdaptiveEntropy {
		// A micro-batch's policy_loss in TRL is its loss before the
		// accumulation scaling: grpokit's share × the micro-batches for the
		// per-micro-batch loss types, its share for dapo, cispo and vespo,
		// whose normalizer is step-wide. Their mean:
		m["policy_loss"] = s.sums[statPolicyLoss]
		if cfg.LossType.GlobalTokens() {
			m["policy_loss"] = s.sums[statPolicyLoss] / n
		}
		m["entropy_coef"] = entropyCoef
	}
}

// bonusEntropy is the step's mean token entropy over the tokens the
// entropy bonus covers (the loss tokens, entropy-masked): what adaptive
// entropy control measures.
func (s *stepStats) bonusEntropy() float64 {
	return s.sums[statBonusEntropy] / max(1, s.sums[statBonusTokens])
}
