// Package pad holds the one rule by which the GRPO and SFT trainers round
// sequence lengths up, so that a few compiled graph shapes serve every
// step.
package pad

import "math/bits"

// Bucket rounds n up to a power of two up to 32, then to four sizes an
// octave (… 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, …), so that padding
// adds at most a quarter (a power of two alone padded a 160-token prompt to
// 256: the training step's activations 43% larger and its attention scores
// twice as large); the result is at most limit when limit > 0 and
// n ≤ limit.
func Bucket(n, limit int) int {
	if n < 1 {
		n = 1
	}
	b := 1 << bits.Len(uint(n-1))
	if b > 32 {
		step := b / 8
		b = (n + step - 1) / step * step
	}
	if limit > 0 && n <= limit && b > limit {
		b = limit
	}
	return b
}
