package tokenizer_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/grpokit/grpokit/tokenizer"
)

// TestWriteFiles: a tokenizer written by WriteFiles loads back with the
// same ids, specials and template, and the files it read come back
// byte for byte; generation_config.json is made when the source had none.
func TestWriteFiles(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	if err := tokenizer.WriteTinyDir(src, []string{"hello", "world"}); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := tok.WriteFiles(dst); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tokenizer.json", "tokenizer_config.json"} {
		a, _ := os.ReadFile(filepath.Join(src, name))
		b, err := os.ReadFile(filepath.Join(dst, name))
		if err != nil || !slices.Equal(a, b) {
			t.Errorf("%s not copied unchanged (%v)", name, err)
		}
	}
	back, err := tokenizer.LoadDir(dst)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dst, "generation_config.json")); err != nil {
		t.Error(err)
	}
	text := "<|im_start|>hello world<|im_end|>"
	if !slices.Equal(back.Tokenizer.Encode(text, false), tok.Tokenizer.Encode(text, false)) ||
		!slices.Equal(back.EOS, tok.EOS) || back.PAD != tok.PAD || back.BOS != tok.BOS || back.Templates["default"] == nil {
		t.Errorf("reloaded tokenizer differs: EOS %v/%v PAD %d/%d BOS %d/%d", back.EOS, tok.EOS, back.PAD, tok.PAD, back.BOS, tok.BOS)
	}
	if err := (&tokenizer.Pretrained{}).WriteFiles(dst); err == nil {
		t.Error("WriteFiles of a hand-made Pretrained: no error")
	}
}
