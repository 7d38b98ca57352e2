package tokenizer

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestTinyDirRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if err := WriteTinyDir(dir, []string{"hello", "world", "answer"}); err != nil {
		t.Fatal(err)
	}
	p, err := LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	tk := p.Tokenizer
	// Hand-computed: bytes are ids 0-255; the " word" chains come first,
	// longest word first: Ġ+a=256 ... Ġanswer=261, Ġ+h=262 ... Ġhello=266,
	// Ġ+w=267 ... Ġworld=271, then a+n=272 ... answer=276, h+e=277 ...
	// hello=280, w+o=281 ... world=284.
	for s, want := range map[string][]int{"hello": {280}, " hello": {266}, "answer world": {276, 271}, "hel": {278}} {
		if got := tk.Encode(s, false); !equalInts(got, want) {
			t.Errorf("%q: got %v, want %v", s, got, want)
		}
	}
	imEnd, ok := tk.TokenToID("<|im_end|>")
	if !ok || p.EOS[0] != imEnd || len(p.EOS) != 1 || p.BOS != -1 {
		t.Errorf("EOS %v BOS %d, want [%d] -1", p.EOS, p.BOS, imEnd)
	}
	if pad, _ := tk.TokenToID("<|endoftext|>"); p.PAD != pad {
		t.Errorf("PAD %d, want %d", p.PAD, pad)
	}
	prompt, err := p.ApplyChat([]Message{{Role: "user", Content: "hello world"}}, ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := "<|im_start|>user\nhello world<|im_end|>\n<|im_start|>assistant\n"; prompt != want {
		t.Errorf("prompt %q, want %q", prompt, want)
	}
	ids := tk.Encode(prompt, false)
	if ids[0] != imEnd-1 || tk.Decode(ids, false) != prompt {
		t.Errorf("ids %v decode to %q", ids, tk.Decode(ids, false))
	}
	if got := tk.Decode(ids, true); got != "user\nhello world\nassistant\n" {
		t.Errorf("skip special: %q", got)
	}
	for _, s := range []string{"", "héllo wörld 😀", "answer: 42\n\n", "\xff\xfe"} {
		if got, want := tk.Decode(tk.Encode(s, false), false), lossyUTF8(s); got != want {
			t.Errorf("round trip %q: got %q want %q", s, got, want)
		}
	}
	if _, err := LoadDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("LoadDir of a missing folder: want an error")
	}
	// A folder with only SentencePiece's file says what to do.
	sp := t.TempDir()
	if err := os.WriteFile(filepath.Join(sp, "tokenizer.model"), []byte{0x0a}, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadDir(sp); err == nil || !strings.Contains(err.Error(), "SentencePiece tokenizer.model but no tokenizer.json") {
		t.Errorf("LoadDir of a SentencePiece-only folder: %v", err)
	}
}

func TestFrequentWords(t *testing.T) {
	letters := regexp.MustCompile(`\p{L}+`)
	texts := []string{"b a b, c", "a b d", "c a"}
	// a:3 b:3 c:2 d:1 — ties alphabetical.
	for n, want := range map[int][]string{
		2:  {"a", "b"},
		3:  {"a", "b", "c"},
		10: {"a", "b", "c", "d"},
	} {
		if got := FrequentWords(texts, letters, n); !slices.Equal(got, want) {
			t.Errorf("FrequentWords(n=%d) = %q, want %q", n, got, want)
		}
	}
}
