package grpo

import (
	"errors"

	"github.com/grpokit/grpokit/dataset"
)

// Env is a multi-turn task, such as a game: each training example is a
// whole episode. At every turn the trainer samples G completions of the
// episode's current prompt, scores each with the rewards (reward.Sample.Turn
// is the turn), trains on all of them as one group, and plays one of them
// (Config.EpisodeSelect) to move the episode on.
//
// Env must be deterministic: Episode(i) gives the same episode (the same
// secret word, the same deal) every time, which is what makes a resumed run
// exact. Use grpotest.TestEnv to check an implementation.
type Env interface {
	// Episode starts episode i (i ≥ 0). Different i should give different
	// episodes; the trainer uses i = 0, 1, 2, … in order.
	Episode(i int) (Episode, error)
}

// Episode is one play of an Env. Its methods are called from one goroutine.
type Episode interface {
	// Observe returns the current turn's prompt, with the answer and
	// metadata the rewards need. It does not change the episode and may be
	// called more than once per turn. Messages usually hold the whole
	// conversation so far.
	Observe() dataset.Example
	// Step plays the model's completion as this turn's move and reports
	// whether the episode is over. A move the game rejects (unparsable,
	// illegal) is not an error: the game decides what it costs (rewards
	// score it, the episode may end). err is for failures of the Env itself;
	// after done or an error, Step is not called again.
	Step(completion string) (done bool, err error)
}

// ErrEpisodeDone may be returned (wrapped) by Step when it is called again
// after the episode is over.
var ErrEpisodeDone = errors.New("grpo: episode is over")
