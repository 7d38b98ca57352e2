package reward

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"
)

// TRL's built-in rewards (trl.rewards, TRL 1.16), with TRL's semantics.
// The token-based ones read Sample.CompletionIDs, which the trainer fills
// as TRL's completion_ids (the EOS token included when generation stopped
// on it); on a Sample without tokens they return NaN, which an Evaluator
// counts as a failed call.

// ThinkFormat is TRL's think_format_reward: 1 when the completion opens
// with <think>, holds no second <think>, and closes the first with
// </think> (anything may follow); otherwise 0.
func ThinkFormat() Func {
	return func(_, completion, _ string) float64 {
		rest, ok := strings.CutPrefix(completion, "<think>")
		if ok && !strings.Contains(rest, "<think>") && strings.Contains(rest, "</think>") {
			return 1
		}
		return 0
	}
}

// SoftOverlongPunishment is TRL's get_soft_overlong_punishment (DAPO's
// Eq. 13) over the completion's tokens: 0 up to maxLen − cache tokens,
// then falling linearly, (maxLen − cache − n)/cache, to −1 at maxLen, and
// −1 beyond. cache 0 punishes only completions longer than maxLen.
func SoftOverlongPunishment(maxLen, cache int) (Scorer, error) {
	if maxLen < 1 || cache < 0 || cache > maxLen {
		return nil, fmt.Errorf("reward: soft overlong punishment: max_completion_len %d, soft_punish_cache %d: want 0 ≤ cache ≤ max_completion_len, max ≥ 1", maxLen, cache)
	}
	return ScorerFunc(func(s Sample) float64 {
		if s.CompletionIDs == nil {
			return math.NaN()
		}
		switch n := len(s.CompletionIDs); {
		case n <= maxLen-cache:
			return 0
		case n <= maxLen:
			return float64(maxLen-cache-n) / float64(cache)
		default:
			return -1
		}
	}), nil
}

// RepetitionPenalty is TRL's get_repetition_penalty_reward: maxPenalty
// (≤ 0) times the share of repeated token n-grams in the completion,
// 1 − unique/total; 0 for a completion shorter than n tokens or without a
// repeat.
func RepetitionPenalty(n int, maxPenalty float64) (Scorer, error) {
	if n < 1 || !(maxPenalty <= 0) {
		return nil, fmt.Errorf("reward: repetition penalty: ngram_size %d, max_penalty %v: want ngram_size ≥ 1 and max_penalty ≤ 0", n, maxPenalty)
	}
	return ScorerFunc(func(s Sample) float64 {
		ids := s.CompletionIDs
		if ids == nil {
			return math.NaN()
		}
		total := len(ids) - n + 1
		if total < 1 {
			return 0
		}
		seen := make(map[string]struct{}, total)
		key := make([]byte, 4*n)
		for i := range total {
			for j, id := range ids[i : i+n] {
				binary.LittleEndian.PutUint32(key[4*j:], uint32(id))
			}
			seen[string(key)] = struct{}{}
		}
		if len(seen) == total {
			return 0
		}
		return (1 - float64(len(seen))/float64(total)) * maxPenalty
	}), nil
}
