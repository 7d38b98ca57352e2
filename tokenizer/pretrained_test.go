package tokenizer

import (
	"os"
	"path/filepath"
	"testing"
)

func TestPretrainedFixtureConfigs(t *testing.T) {
	f := fixtures(t) // skips when shared is absent
	dir := filepath.Join(sharedDir(), "tokenizers")
	gen := filepath.Join(t.TempDir(), "generation_config.json")
	if err := os.WriteFile(gen, []byte(`{"bos_token_id": 151643, "eos_token_id": [151645, 151643]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg tokenizerConfig
	var g generationConfig
	if err := readOptionalJSON(filepath.Join(dir, "qwen3.tokenizer_config.json"), &cfg); err != nil {
		t.Fatal(err)
	}
	if err := readOptionalJSON(gen, &g); err != nil {
		t.Fatal(err)
	}
	p, err := finishConfig(&Pretrained{Tokenizer: f.toks["qwen3"], BOS: -1, PAD: -1, Templates: map[string]*ChatTemplate{}}, cfg, g, "qwen3.tokenizer_config.json")
	if err != nil {
		t.Fatal(err)
	}
	// Qwen3: bos_token null -> generation_config's; eos <|im_end|> then <|endoftext|>; pad <|endoftext|>.
	if p.BOS != 151643 || !equalInts(p.EOS, []int{151645, 151643}) || p.PAD != 151643 {
		t.Errorf("qwen3: BOS %d EOS %v PAD %d", p.BOS, p.EOS, p.PAD)
	}
	out, err := p.ApplyChat([]Message{{Role: "user", Content: "Hi"}}, ChatOptions{AddGenerationPrompt: true, Vars: map[string]any{"enable_thinking": false}})
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"; out != want {
		t.Errorf("qwen3 chat: %q want %q", out, want)
	}
}

func TestPretrainedLlamaGemmaConfigs(t *testing.T) {
	f := fixtures(t)
	dir := filepath.Join(sharedDir(), "tokenizers")
	for _, c := range []struct {
		model    string
		bos, pad int
		eos      []int
	}{
		{"llama31", 128000, 128009, []int{128009}},
		{"gemma3", 2, 0, []int{106}},
	} {
		p := &Pretrained{Tokenizer: f.toks[c.model], BOS: -1, PAD: -1, Templates: map[string]*ChatTemplate{}}
		var cfg tokenizerConfig
		if err := readJSON(filepath.Join(dir, c.model+".tokenizer_config.json"), &cfg); err != nil {
			t.Fatal(err)
		}
		q, err := finishConfig(p, cfg, generationConfig{}, c.model)
		if err != nil {
			t.Fatalf("%s: %v", c.model, err)
		}
		if q.BOS != c.bos || q.PAD != c.pad || !equalInts(q.EOS, c.eos) {
			t.Errorf("%s: BOS %d EOS %v PAD %d, want %d %v %d", c.model, q.BOS, q.EOS, q.PAD, c.bos, c.eos, c.pad)
		}
		if q.Templates["default"] == nil {
			t.Errorf("%s: no chat template", c.model)
		}
	}
}
