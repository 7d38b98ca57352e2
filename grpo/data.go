package grpo

import (
	"errors"
	"fmt"
)

// Message is one chat message, as in a Hugging Face chat template.
type Message struct {
	Role    string `json:"role"` // "system", "user" or "assistant"
	Content string `json:"content"`
}

// Example is one prompt to train on.
//
// A prompt is plain text (Prompt), a conversation (Messages) or token ids
// (PromptIDs); the Policy turns it into tokens: plain text as it is,
// messages through its chat template with the generation prompt added, ids
// unchanged. Rewards see the text of Text().
type Example struct {
	// Prompt is the plain-text prompt. When Messages is set it is optional
	// and only what rewards see.
	Prompt string `json:"prompt,omitempty"`
	// Messages is the prompt as chat messages; nil for a plain-text prompt.
	Messages []Message `json:"messages,omitempty"`
	// PromptIDs, when set, is the prompt as token ids: the Policy uses them
	// as they are (no chat template, no special tokens added), and Prompt
	// or Messages are only what rewards see. Like HF generate's input_ids.
	PromptIDs []int `json:"prompt_ids,omitempty"`
	// Answer is the reference answer passed to rewards; may be empty.
	Answer string `json:"answer,omitempty"`
	// Meta carries task data to rewards (reward.Sample.Meta); may be nil.
	Meta map[string]string `json:"meta,omitempty"`
}

// Text returns the prompt text rewards see: Prompt, or when it is empty the
// content of the last message.
func (e Example) Text() string {
	if e.Prompt != "" || len(e.Messages) == 0 {
		return e.Prompt
	}
	return e.Messages[len(e.Messages)-1].Content
}

// Dataset is a finite, indexable set of examples. Example must return the
// same example for the same index every time: the trainer derives its order
// from the index and Config.Seed, which is what makes a resumed run exact.
// Implementations used by one Trainer are called from one goroutine.
type Dataset interface {
	// Len returns the number of examples (at least 1).
	Len() int
	// Example returns example i, 0 ≤ i < Len().
	Example(i int) (Example, error)
}

// SliceDataset is a Dataset over a slice.
type SliceDataset []Example

// Len returns len(d).
func (d SliceDataset) Len() int { return len(d) }

// Example returns d[i], or an error when i is out of range.
func (d SliceDataset) Example(i int) (Example, error) {
	if i < 0 || i >= len(d) {
		return Example{}, fmt.Errorf("grpo: dataset: index %d out of range [0, %d)", i, len(d))
	}
	return d[i], nil
}

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
	Observe() Example
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
