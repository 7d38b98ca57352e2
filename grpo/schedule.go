package grpo

import "math"

// LearningRateAt returns the learning rate of optimizer step (0-based) of a
// run of total steps, as HF's get_scheduler computes it: a linear warmup
// from 0 over the warmup steps (WarmupSteps, else WarmupRatio × total,
// rounded up), then LRSchedulerType's decay from LearningRate to 0 at
// total. ScheduleConstant keeps LearningRate after the warmup.
func (c Config) LearningRateAt(step, total int) float64 {
	warm := c.WarmupSteps
	if warm == 0 && c.WarmupRatio > 0 {
		warm = int(math.Ceil(c.WarmupRatio * float64(total)))
	}
	if step < warm {
		return c.LearningRate * float64(step) / float64(max(1, warm))
	}
	progress := float64(step-warm) / float64(max(1, total-warm))
	switch c.LRSchedulerType {
	case ScheduleLinear:
		return c.LearningRate * max(0, 1-progress)
	case ScheduleCosine:
		return c.LearningRate * max(0, 0.5*(1+math.Cos(math.Pi*progress)))
	default:
		return c.LearningRate
	}
}
