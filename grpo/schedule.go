package grpo

import "math"

// LearningRateAt returns the learning rate of optimizer step (0-based) of a
// run of total steps, as HF's get_scheduler computes it: a linear warmup
// from 0 over the warmup steps (WarmupSteps; a WarmupSteps in (0, 1), else
// WarmupRatio, × total, rounded up), then LRSchedulerType's decay from
// LearningRate to 0 at total. ScheduleConstant keeps LearningRate after the
// warmup.
func (c Config) LearningRateAt(step, total int) float64 {
	steps, ratio := int(c.WarmupSteps), c.WarmupRatio
	if c.WarmupSteps > 0 && c.WarmupSteps < 1 {
		steps, ratio = 0, c.WarmupSteps // transformers 5: a fraction of the run
	}
	return ScheduledRate(c.LRSchedulerType, c.LearningRate, steps, ratio, step, total)
}

// ScheduledRate returns the learning rate of optimizer step (0-based) of a
// run of total steps under schedule s with peak rate lr, as HF's
// get_scheduler computes it: a linear warmup from 0 over warmupSteps (else
// warmupRatio × total, rounded up), then s's decay to 0 at total
// (ScheduleConstant keeps lr).
func ScheduledRate(s Schedule, lr float64, warmupSteps int, warmupRatio float64, step, total int) float64 {
	warm := warmupSteps
	if warm == 0 && warmupRatio > 0 {
		warm = int(math.Ceil(warmupRatio * float64(total)))
	}
	if step < warm {
		return lr * float64(step) / float64(max(1, warm))
	}
	progress := float64(step-warm) / float64(max(1, total-warm))
	switch s {
	case ScheduleLinear:
		return lr * max(0, 1-progress)
	case ScheduleCosine:
		return lr * max(0, 0.5*(1+math.Cos(math.Pi*progress)))
	default:
		return lr
	}
}
