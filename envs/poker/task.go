package poker

import (
	"fmt"
	"strings"

	"github.com/grpokit/grpokit/reward"
)

// Prompt returns the instruction for classifying h. The policy's reply must
// be exactly one label from Labels.
func Prompt(h Hand) string {
	return fmt.Sprintf("Classify this five-card poker hand: %s\n"+
		"Each card is a rank (2-9, T=10, J, Q, K, A) followed by a suit (c=clubs, d=diamonds, h=hearts, s=spades).\n"+
		"Answer with exactly one of: %s.",
		h, strings.Join(labels[:], ", "))
}

// Reward scores a completion against the true label (answer): the class's
// Weight when the completion parses (ParseLabel) to the answer's class, and
// 0 when it is wrong or not a label. Convert it with reward.Func(poker.Reward).
func Reward(_, completion, answer string) float64 {
	want, err := ParseLabel(answer)
	if err != nil {
		return 0
	}
	got, err := ParseLabel(completion)
	if err != nil || got != want {
		return 0
	}
	return want.Weight()
}

// Rewards returns the task's rewards for a reward.Evaluator: "correct",
// the class-weighted Reward, with weight 1.
func Rewards() []reward.Named {
	return []reward.Named{{Name: "correct", Weight: 1, Scorer: reward.Func(Reward)}}
}
