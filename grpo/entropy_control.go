package grpo

import "math"

// entropyControl is TRL 1.16's adaptive entropy control (Skywork-OR1,
// Config.UseAdaptiveEntropy): a coefficient that rises while the policy's
// entropy is at or below a target and falls otherwise, applied only when
// the last measured entropy is at or below the target.
type entropyControl struct {
	coef float64 // the coefficient now
	last float64 // the last optimizer step's mean token entropy; +Inf before the first
}

// newEntropyControl starts at Config.EntropyCoef with no entropy measured.
func newEntropyControl(cfg Config) entropyControl {
	return entropyControl{coef: cfg.EntropyCoef, last: math.Inf(1)}
}

// applied is the coefficient the next step's loss uses: coef when the
// last entropy was at most the target, else 0 (so none on the first step).
func (e entropyControl) applied(cfg Config) float64 {
	if e.last <= cfg.EntropyTarget {
		return e.coef
	}
	return 0
}

// update folds in a step's mean token entropy (over the entropy-masked
// loss tokens of all its micro-batches): coef moves by EntropyCoefDelta
// towards EntropyCoefMax when entropy ≤ EntropyTarget, towards
// EntropyCoefMin otherwise.
func (e *entropyControl) update(cfg Config, entropy float64) {
	if entropy <= cfg.EntropyTarget {
		e.coef = min(e.coef+cfg.EntropyCoefDelta, cfg.EntropyCoefMax)
	} else {
		e.coef = max(e.coef-cfg.EntropyCoefDelta, cfg.EntropyCoefMin)
	}
	e.last = entropy
}
