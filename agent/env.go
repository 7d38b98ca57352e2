package agent

import "context"

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
