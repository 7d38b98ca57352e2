package dataset

import "fmt"

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
		return Example{}, fmt.Errorf("dataset: index %d out of range [0, %d)", i, len(d))
	}
	return d[i], nil
}
