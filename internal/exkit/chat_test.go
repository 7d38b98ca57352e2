package exkit

import (
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/internal/sharedtest"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/tokenizer"
)

// realTokenizer loads ../shared/tokenizers/NAME.* as a model folder would hold it.
func realTokenizer(t *testing.T, name string) *tokenizer.Pretrained {
	t.Helper()
	dir := t.TempDir()
	sharedtest.WriteTokenizer(t, dir, name)
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestPolicyRendersChatTemplates checks the prompts the examples' -model
// path gives Qwen3 (enable_thinking off by default, on with -thinking) and
// Gemma 3 (no system role: the system message is folded into the first
// user turn by its template).
func TestPolicyRendersChatTemplates(t *testing.T) {
	if testing.Short() {
		t.Skip("loads two real tokenizers")
	}
	ex := dataset.Example{Messages: []dataset.Message{{Role: "system", Content: "Answer briefly."}, {Role: "user", Content: "Two plus two?"}}}
	toks := map[string]*tokenizer.Pretrained{}
	for _, tc := range []struct {
		name     string
		thinking bool
		want     string
		not      string
	}{
		{"qwen3", false, "<|im_start|>system\nAnswer briefly.<|im_end|>\n<|im_start|>user\nTwo plus two?<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n", ""},
		{"qwen3", true, "<|im_start|>user\nTwo plus two?<|im_end|>\n<|im_start|>assistant\n", "<think>"},
		{"gemma3", false, "<start_of_turn>user\nAnswer briefly.\n\nTwo plus two?<end_of_turn>\n<start_of_turn>model\n", "system"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tok := toks[tc.name]
			if tok == nil {
				tok = realTokenizer(t, tc.name)
				toks[tc.name] = tok
			}
			m, err := model.New(model.Config{ModelType: "llama", VocabSize: tok.Tokenizer.VocabSize(), HiddenSize: 8,
				IntermediateSize: 8, NumHiddenLayers: 1, NumAttentionHeads: 2, NumKeyValueHeads: 1, MaxPositionEmbeddings: 64,
				RMSNormEps: 1e-6, RopeTheta: 1e4, HiddenAct: "silu", BOSTokenID: -1}, 1, nil)
			if err != nil {
				t.Fatal(err)
			}
			s := &Setup{Model: m, Tok: tok}
			p, err := s.Policy(&Config{Thinking: tc.thinking}, nil)
			if err != nil {
				t.Fatal(err)
			}
			ids, err := p.PromptIDs(ex, 0)
			if err != nil {
				t.Fatal(err)
			}
			text := tok.Tokenizer.Decode(ids, false)
			if !strings.HasSuffix(text, tc.want) {
				t.Errorf("prompt %q\nwant it to end with %q", text, tc.want)
			}
			if tc.not != "" && strings.Contains(text, tc.not) {
				t.Errorf("prompt %q contains %q", text, tc.not)
			}
		})
	}
}
