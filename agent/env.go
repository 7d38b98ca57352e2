package agent

import (
	"context"
	"fmt"

	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/tokenizer"
)

// Environment is the state one rollout's tools act on (TRL's
// environment_factory): a Runner makes one per trajectory with the
// factory, resets it before the trajectory starts, offers its Tools to the
// model, and, when it is a Rewarder, asks it for the trajectory's reward.
// Instances are reused across batches (constructed once, reset often), so
// Reset must clear all state of the previous trajectory. A trajectory's
// environment is used from one goroutine at a time.
type Environment interface {
	// Reset starts a new trajectory for prompt p. A non-empty suffix is
	// appended to the prompt's last user message (or its Text) before the
	// prompt is rendered, e.g. the state of a game.
	Reset(ctx context.Context, p Prompt) (suffix string, err error)
	// Tools are the environment's tools, bound to this instance (build them
	// with NewTool over closures or method values). Every instance must
	// offer the same names and schemas: they are declared in the prompt.
	Tools() []*Tool
}

// Rewarder is an Environment that owns the reward of its trajectory
// (TRL's get_reward): the trainer adds it, with weight 1, to the reward
// functions' scores.
type Rewarder interface {
	// Reward scores the trajectory from the environment's state after it.
	Reward(ctx context.Context) (float64, error)
}

// EnvFactory makes a new environment instance.
type EnvFactory func() (Environment, error)

// EnvReward is the reward of environments that own it (Rewarder): it
// scores a sample by its environment's Reward, 0 when the sample has no
// environment or it is not a Rewarder, and panics on a Reward error so
// that the reward Evaluator counts it as a failure (a failed reward scores
// 0). Give it to the trainer like any reward, usually with weight 1, as
// TRL adds an environment's get_reward.
func EnvReward() reward.Scorer { return envReward{} }

type envReward struct{}

func (envReward) Score(s reward.Sample) float64 {
	return envReward{}.ScoreContext(context.Background(), s)
}

func (envReward) ScoreContext(ctx context.Context, s reward.Sample) float64 {
	rw, ok := s.Env.(Rewarder)
	if !ok {
		return 0
	}
	v, err := rw.Reward(ctx)
	if err != nil {
		panic(fmt.Sprintf("environment reward: %v", err))
	}
	return v
}

// RewardMessages converts a trajectory's messages for reward.Sample: the
// assistant turns' content outside tool calls, and the results.
func RewardMessages(msgs []tokenizer.Message) []reward.Message {
	out := make([]reward.Message, len(msgs))
	for i, m := range msgs {
		name, _ := m.Extra["name"].(string)
		out[i] = reward.Message{Role: m.Role, Content: m.Content, Name: name}
	}
	return out
}
