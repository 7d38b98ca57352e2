package grpo_test

import (
	"slices"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/tokenizer"
)

// A plain prompt goes to the model untemplated (TRL's "standard" format)
// unless TemplatePlainPrompts renders it as one user message, exactly as
// the same prompt given as a conversation.
func TestTemplatePlainPrompts(t *testing.T) {
	dir := t.TempDir()
	if err := tokenizer.WriteTinyDir(dir, []string{"hello", "world"}); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	plain := dataset.Example{Prompt: "hello world"}
	chat := dataset.Example{Messages: []dataset.Message{{Role: "user", Content: "hello world"}}}
	raw, err := grpo.EncodePrompt(tok, plain, grpo.LMPolicyOptions{NoSpecialTokens: true}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if want := tok.Tokenizer.Encode("hello world", false); !slices.Equal(raw, want) {
		t.Errorf("plain prompt: %v, want untemplated %v", raw, want)
	}
	opts := grpo.LMPolicyOptions{TemplatePlainPrompts: true}
	templated, err := grpo.EncodePrompt(tok, plain, opts, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The template by hand (the tiny tokenizer's ChatML).
	if want := tok.Tokenizer.Encode("<|im_start|>user\nhello world<|im_end|>\n<|im_start|>assistant\n", false); !slices.Equal(templated, want) {
		t.Errorf("templated plain prompt: %v, want %v", templated, want)
	}
	fromChat, err := grpo.EncodePrompt(tok, chat, grpo.LMPolicyOptions{}, 0)
	if err != nil || !slices.Equal(fromChat, templated) {
		t.Errorf("conversation %v (%v), want the templated plain prompt's %v", fromChat, err, templated)
	}
}
