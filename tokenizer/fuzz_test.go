package tokenizer

import (
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/text/unicode/norm"
)

var (
	tinyOnce sync.Once
	tinyTok  *Tokenizer
	tinyErr  error
)

// tiny is a small byte-level tokenizer built here, so the fuzz targets run
// even without ../shared.
func tiny(tb testing.TB) *Tokenizer {
	tinyOnce.Do(func() {
		var data []byte
		if data, tinyErr = NewByteBPE([]string{"the", "answer", "is", "think"}, ChatMLSpecials()); tinyErr == nil {
			tinyTok, tinyErr = FromJSON(data)
		}
	})
	if tinyErr != nil {
		tb.Fatal(tinyErr)
	}
	return tinyTok
}

func corpusSeeds(f *testing.F) {
	var corpus []string
	if dir := sharedDir(); dir != "" {
		_ = readJSON(filepath.Join(dir, "tokenizers", "corpus.json"), &corpus)
	}
	corpus = append(corpus, "", "a\xffb", "\xe2\x82", "<|im_start|>x<|im_end|>", "  \n\t ", "'S 'LL 'd")
	for _, s := range corpus {
		f.Add(s)
	}
}

// FuzzEncodeDecode: encoding never panics and decode(encode(s)) gives back
// s after the tokenizer's own normalizer (NFC for Qwen3, none for Llama 3.1
// and the tiny model) and the lossy UTF-8 conversion.
func FuzzEncodeDecode(f *testing.F) {
	corpusSeeds(f)
	var toks map[string]*Tokenizer
	if sharedDir() != "" && !testing.Short() {
		toks = fixtures(f).toks
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := lossyUTF8(s)
		if got := tiny(t).Decode(tiny(t).Encode(s, false), false); got != want {
			t.Errorf("tiny: %q -> %q", s, got)
		}
		if toks == nil {
			return
		}
		if got := toks["llama31"].Decode(toks["llama31"].Encode(s, false), false); got != want {
			t.Errorf("llama31: %q -> %q", s, got)
		}
		if got, w := toks["qwen3"].Decode(toks["qwen3"].Encode(s, false), false), norm.NFC.String(want); got != w {
			t.Errorf("qwen3: %q -> %q, want %q", s, got, w)
		}
		toks["gemma3"].Encode(s, true) // must not panic
	})
}

// FuzzFastMatchers checks the hand-written pre-tokenizer matchers against
// regexp2 running the original patterns.
func FuzzFastMatchers(f *testing.F) {
	corpusSeeds(f)
	pats := []string{llama3Pattern, qwen2Pattern, gpt2Pattern}
	res := make([]pattern, len(pats))
	for i, p := range pats {
		re, err := compileRegex(p)
		if err != nil {
			f.Fatal(err)
		}
		res[i] = pattern{literal: p, re: re}
	}
	f.Fuzz(func(t *testing.T, s string) {
		s = lossyUTF8(s)
		for i, p := range pats {
			want := res[i].findAll(s, nil)
			got := fastMatcher(p)(s, nil)
			if !equalSpans(got, want) {
				t.Errorf("pattern %d on %q:\n fast  %v\n regex %v", i, s, got, want)
			}
		}
	})
}

func equalSpans(a, b [][2]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestFastMatchersAgreeWithRegexp2(t *testing.T) {
	extra := []string{"x  y", "a \n\n b", "\r\n\r\n  x", "   ", " !!", "\t!x", "1234567", "٣٤٥ ½", "'Re 're 'LL", "a\u00a0b  \u3000c", "x\u200by", "!!!???...,,,;;; --- ***", "end   "}
	pats := []string{llama3Pattern, qwen2Pattern, gpt2Pattern}
	var corpus []string
	if dir := sharedDir(); dir != "" {
		_ = readJSON(filepath.Join(dir, "tokenizers", "corpus.json"), &corpus)
	}
	for _, p := range pats {
		re, err := compileRegex(p)
		if err != nil {
			t.Fatal(err)
		}
		rp := pattern{literal: p, re: re}
		for _, s := range append(corpus, extra...) {
			if got, want := fastMatcher(p)(s, nil), rp.findAll(s, nil); !equalSpans(got, want) {
				t.Errorf("%q on %q:\n fast  %v\n regex %v", p[:12], s, got, want)
			}
		}
	}
}

func TestEncodeBatchMatchesEncode(t *testing.T) {
	tk := tiny(t)
	texts := []string{"the answer is 4", "", "<|im_start|>think<|im_end|>", "naïve 😀", "\xff"}
	got := tk.EncodeBatch(texts, false)
	for i, s := range texts {
		if !equalInts(got[i], tk.Encode(s, false)) {
			t.Errorf("batch[%d] %q: %v", i, s, got[i])
		}
	}
}

// FuzzChatTemplateRender renders arbitrary templates under small limits:
// every render must end (with text or an error) without a panic, and a
// render that reaches a limit must say so with ErrRenderLimit.
func FuzzChatTemplateRender(f *testing.F) {
	for _, tc := range hostileTemplates {
		f.Add(tc.src)
	}
	for _, s := range []string{
		`{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}`,
		`{{ messages|tojson(indent=2) }}`, `{% set ns = namespace(x=0) %}{% for i in range(5) %}{% set ns.x = ns.x + i %}{% endfor %}{{ ns.x }}`,
		`{{ (messages[0].content * 3)|upper|replace('A', 'bb') }}`, `{% macro f(n) %}{% if n %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(9) }}`,
	} {
		f.Add(s)
	}
	lim := RenderLimits{MaxSteps: 5000, MaxOutputBytes: 1 << 16, MaxDepth: 50, Timeout: 2 * time.Second}
	msgs := []Message{{Role: "user", Content: "What is 2+2?"}, {Role: "assistant", Content: "<think>x</think>4"}}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4096 {
			return
		}
		ct, err := NewChatTemplate(src)
		if err != nil {
			return
		}
		if ct, err = ct.WithLimits(lim); err != nil {
			t.Fatalf("recompiling with limits: %v", err)
		}
		out, err := ct.Apply(msgs, ChatOptions{AddGenerationPrompt: true})
		if err == nil && len(out) > lim.MaxOutputBytes {
			t.Fatalf("output of %d bytes passed a limit of %d", len(out), lim.MaxOutputBytes)
		}
	})
}
