package gguf

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/text/unicode/norm"

	"github.com/grpokit/grpokit/internal/sharedtest"
	"github.com/grpokit/grpokit/tokenizer"
)

// extraTexts are tokenizer edge cases beyond ../shared/tokenizers/corpus.json:
// digits, whitespace runs, tabs and newlines, non-Latin scripts, emoji,
// combining marks, and special tokens inside text.
var extraTexts = []string{
	"", "1234567890", "3.14159", "12+34=46", "x1y22z333 4444 55555", "٣٤٥ ①②③ Ⅻ",
	" ", "  ", "a  b   c    d", "\t", "\t\t\tx", " \n \n", "x\r\n\r\ny", "end   ", "\n \t\v\f\r x",
	"我爱北京天安门。今天天气很好！", "مرحبا بالعالم، كيف حالك؟", "नमस्ते दुनिया", "สวัสดีครับ",
	"🤖🚀✨ 👩🏾‍💻 🏳️‍🌈", "e\u0301 a\u0308 n\u0303 \u0915\u094d\u0937", "Ǆ ǅ ǆ İ ı ſ ﬁ",
	"don't DON'T it'S we'Ve", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
	"ab<|im_end|>cd<|endoftext|><|endoftext|> <|im_start|> x", "<|im_start", "<think></think>", "it'ſ IT'ſ x'ſt",
}

// readCorpus returns corpus.json's strings.
func readCorpus(t *testing.T) []string {
	t.Helper()
	var corpus []string
	readJSON(t, filepath.Join(sharedtest.Dir(t, "tokenizers"), "corpus.json"), &corpus)
	return corpus
}

// writeMeta writes a GGUF file of metadata only (no tensors).
func writeMeta(t *testing.T, path string, meta []kv) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	e := newEncoder(f)
	if err := e.header(meta, nil); err != nil {
		t.Fatal(err)
	}
	if err := e.flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// readVocab opens path and reads its vocabulary.
func readVocab(t *testing.T, path string) *Vocab {
	t.Helper()
	g, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	v, err := g.Vocab()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// hfTokenizer writes v's Hugging Face files to a folder and loads them
// with package tokenizer.
func hfTokenizer(t *testing.T, v *Vocab, opts HFOptions) *tokenizer.Pretrained {
	t.Helper()
	tj, cfg, err := v.HFFiles(opts)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tj, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// vocabJob is a run.mjs job that loads only the vocabulary of a file.
type vocabJob struct {
	Model     string   `json:"model"`
	VocabOnly bool     `json:"vocabOnly"`
	Tokenize  []string `json:"tokenize"`
}

// llamaCppTokenize returns llama.cpp's ids (special tokens parsed, no BOS)
// of texts for each file, loading only the vocabularies.
func llamaCppTokenize(t *testing.T, script string, files []string, texts []string) [][][]int {
	t.Helper()
	jobs := make([]vocabJob, len(files))
	for i, f := range files {
		jobs[i] = vocabJob{Model: f, VocabOnly: true, Tokenize: texts}
	}
	in, err := json.Marshal(jobs)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("llama.cpp (node %s): %v\n%s", script, err, stderr.String())
	}
	var res []lcOut
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(files) {
		t.Fatalf("llama.cpp output (%d results for %d files): %v\n%.500s\n%s", len(res), len(files), err, out, stderr.String())
	}
	ids := make([][][]int, len(res))
	for i, r := range res {
		ids[i] = r.Tokens
	}
	return ids
}

// compareIDs reports every text whose ids differ and returns how many
// texts and ids agree.
func compareIDs(t *testing.T, name string, texts []string, got, want [][]int) (sameTexts, sameIDs, totalIDs int) {
	t.Helper()
	for i, text := range texts {
		g, w := got[i], want[i]
		totalIDs += len(w)
		for j := range min(len(g), len(w)) {
			if g[j] != w[j] {
				break
			}
			sameIDs++
		}
		if slices.Equal(g, w) || len(g) == 0 && len(w) == 0 {
			sameTexts++
			continue
		}
		t.Errorf("%s: %q: got %v, llama.cpp %v", name, text, g, w)
	}
	return sameTexts, sameIDs, totalIDs
}

// TestVocabSmolLM2 reads the tokenizer of the real SmolLM2-135M-Instruct
// GGUF and checks that its Hugging Face files tokenize as llama.cpp does
// with the same file.
func TestVocabSmolLM2(t *testing.T) {
	path := smollm2Path(t)
	g, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := g.Vocab()
	if err != nil {
		t.Fatal(err)
	}
	ctxLen, _, err := g.Int("llama.context_length")
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if v.Model != "gpt2" || v.Pre != "smollm" || len(v.Tokens) != 49152 || len(v.Merges) != 48900 ||
		v.BOS != 1 || v.EOS != 2 || v.UNK != 0 || v.PAD != 2 || v.AddBOS || v.Placeholder ||
		!strings.Contains(v.ChatTemplate, "<|im_start|>") || v.Tokens[2] != "<|im_end|>" {
		t.Fatalf("vocabulary: model %q pre %q, %d tokens, %d merges, bos %d eos %d unk %d pad %d, add_bos %v, template %.40q",
			v.Model, v.Pre, len(v.Tokens), len(v.Merges), v.BOS, v.EOS, v.UNK, v.PAD, v.AddBOS, v.ChatTemplate)
	}
	p := hfTokenizer(t, v, HFOptions{ModelMaxLength: int(ctxLen)})
	if p.BOSToken != "<|im_start|>" || p.EOSToken != "<|im_end|>" || p.PAD != 2 || p.Templates["default"] == nil {
		t.Errorf("tokenizer_config: bos %q eos %q pad %d, template %v", p.BOSToken, p.EOSToken, p.PAD, p.Templates["default"] != nil)
	}
	chat, err := p.ApplyChat([]tokenizer.Message{{Role: "user", Content: "What is 12+34?"}, {Role: "assistant", Content: "46."}},
		tokenizer.ChatOptions{AddGenerationPrompt: true})
	if err != nil {
		t.Fatal(err)
	}
	texts := append(append(readCorpus(t), extraTexts...), chat)
	script := llamaCppScript(t)
	want := runLlamaCpp(t, script, []lcJob{{Model: path, Tokenize: texts}})[0].Tokens
	got := make([][]int, len(texts))
	for i, s := range texts {
		got[i] = p.Tokenizer.Encode(s, false)
	}
	same, ids, total := compareIDs(t, "SmolLM2", texts, got, want)
	t.Logf("SmolLM2: %d/%d texts and %d/%d ids as llama.cpp", same, len(texts), ids, total)
}

// distinctPres names one pre-tokenizer of each distinct behavior of
// preSpecs.
var distinctPres = []string{"default", "llama-bpe", "dbrx", "gpt-2", "trillion", "smollm", "starcoder", "qwen2",
	"stablelm2", "qwen35", "falcon", "deepseek-coder", "poro-chat", "bloom", "gpt-4o", "tekken", "seed-coder"}

// TestVocabPreTokenizersLlamaCpp gives the real SmolLM2 vocabulary each of
// llama.cpp's pre-tokenizers reproduced here, and checks the tokenizer.json
// against llama.cpp, loading the vocabulary only. It also writes Gemma 3's
// SentencePiece vocabulary (NewVocab), with and without the space prefix.
func TestVocabPreTokenizersLlamaCpp(t *testing.T) {
	path := smollm2Path(t)
	script := llamaCppScript(t)
	g, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var arch []kv // the model's keys, for llama.cpp to load a vocabulary
	var tok []kv
	for _, m := range g.Metadata {
		switch {
		case m.Key == "llama.vocab_size":
		case strings.HasPrefix(m.Key, "tokenizer."):
			tok = append(tok, kv{m.Key, m.Value})
		default:
			arch = append(arch, kv{m.Key, m.Value})
		}
	}
	g.Close()
	tmp := t.TempDir()
	var files, names []string
	for _, pre := range distinctPres {
		meta := slices.Clone(arch)
		for _, m := range tok {
			if m.Key == "tokenizer.ggml.pre" {
				m.Value = pre
			}
			meta = append(meta, m)
		}
		files = append(files, filepath.Join(tmp, pre+".gguf"))
		names = append(names, "SmolLM2 vocabulary, pre "+pre)
		writeMeta(t, files[len(files)-1], meta)
	}
	gemma := gemmaVocab(t)
	for _, prefix := range []bool{false, true} {
		gemma.AddSpacePrefix = prefix
		files = append(files, filepath.Join(tmp, fmt.Sprintf("gemma3-prefix-%v.gguf", prefix)))
		names = append(names, fmt.Sprintf("Gemma 3 vocabulary, add_space_prefix %v", prefix))
		writeMeta(t, files[len(files)-1], append(slices.Clone(arch), gemma.metadata()...))
	}
	texts := append(readCorpus(t), extraTexts...)
	want := llamaCppTokenize(t, script, files, texts)
	for i, f := range files {
		p := hfTokenizer(t, readVocab(t, f), HFOptions{})
		got := make([][]int, len(texts))
		for j, s := range texts {
			got[j] = p.Tokenizer.Encode(s, false)
		}
		same, ids, total := compareIDs(t, names[i], texts, got, want[i])
		t.Logf("%s: %d/%d texts and %d/%d ids as llama.cpp", names[i], same, len(texts), ids, total)
	}
}

// gemmaVocab is NewVocab of Gemma 3's real tokenizer.
func gemmaVocab(t *testing.T) *Vocab {
	t.Helper()
	dir := t.TempDir()
	sharedtest.WriteTokenizer(t, dir, "gemma3")
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := NewVocab(tok, sharedtest.TokenizerJSON(t, "gemma3"), tok.Tokenizer.VocabSize())
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestVocabRoundTrip writes the real tokenizers of ../shared/tokenizers to
// GGUF (NewVocab), reads them back (File.Vocab), makes Hugging Face files
// of them (HFFiles) and checks their ids against the reference ids of the
// Rust tokenizers library for the originals.
func TestVocabRoundTrip(t *testing.T) {
	toks := sharedtest.Dir(t, "tokenizers")
	corpus := readCorpus(t)
	for _, name := range []string{"qwen3", "llama31", "gemma3"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			sharedtest.WriteTokenizer(t, dir, name)
			orig, err := tokenizer.LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			v, err := NewVocab(orig, sharedtest.TokenizerJSON(t, name), orig.Tokenizer.VocabSize())
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name+".gguf")
			writeMeta(t, path, v.metadata())
			back := readVocab(t, path)
			if !slices.Equal(back.Tokens, v.Tokens) || !slices.Equal(back.Types, v.Types) || !slices.Equal(back.Merges, v.Merges) ||
				!slices.Equal(back.Scores, v.Scores) || back.Model != v.Model || back.Pre != v.Pre || back.BOS != v.BOS ||
				back.EOS != v.EOS || back.PAD != v.PAD || back.UNK != v.UNK || back.AddBOS != v.AddBOS ||
				back.AddSpacePrefix != v.AddSpacePrefix || back.ChatTemplate != v.ChatTemplate {
				t.Fatalf("read back differs: model %q/%q pre %q/%q bos %d/%d eos %d/%d pad %d/%d unk %d/%d add_bos %v/%v",
					back.Model, v.Model, back.Pre, v.Pre, back.BOS, v.BOS, back.EOS, v.EOS, back.PAD, v.PAD, back.UNK, v.UNK, back.AddBOS, v.AddBOS)
			}
			start := time.Now()
			tj, _, err := back.HFFiles(HFOptions{})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: tokenizer.json of %d bytes in %v", name, len(tj), time.Since(start).Round(time.Millisecond))
			p := hfTokenizer(t, back, HFOptions{})
			if p.BOS != orig.BOS || p.PAD != orig.PAD || len(p.EOS) == 0 || len(orig.EOS) == 0 || p.EOS[0] != orig.EOS[0] {
				t.Errorf("special ids: bos %d eos %v pad %d, want bos %d eos %v pad %d", p.BOS, p.EOS, p.PAD, orig.BOS, orig.EOS, orig.PAD)
			}
			for _, s := range []string{"Hello", ""} {
				if got, want := p.Tokenizer.Encode(s, true), orig.Tokenizer.Encode(s, true); !slices.Equal(got, want) {
					t.Errorf("Encode(%q, add special tokens): %v, want %v", s, got, want)
				}
			}
			var ref struct {
				IDs [][]int `json:"ids"`
			}
			readJSON(t, filepath.Join(toks, name+".golden.json"), &ref)
			same, nfc := 0, 0
			for i, s := range corpus {
				got := p.Tokenizer.Encode(s, false)
				switch {
				case slices.Equal(got, ref.IDs[i]):
					same++
				case name == "qwen3" && slices.Equal(p.Tokenizer.Encode(norm.NFC.String(s), false), ref.IDs[i]):
					// tokenizer.json asks for NFC, which llama.cpp (and so the
					// files made here) does not apply.
					nfc++
					t.Logf("%s: %q: ids of the NFC-normalized text (llama.cpp does not normalize)", name, s)
				default:
					t.Errorf("%s: %q: %v, want %v", name, s, got, ref.IDs[i])
				}
			}
			t.Logf("%s: %d/%d corpus strings as the original tokenizer, %d more once NFC-normalized", name, same, len(corpus), nfc)
		})
	}
}

// TestHFFilesSentencePiece: a hand-made SentencePiece vocabulary merges
// the highest-scoring pair first, falls back to bytes, and prefixes "▁".
func TestHFFilesSentencePiece(t *testing.T) {
	tokens := []string{"<unk>", "<s>", "</s>", "▁", "a", "b", "c", "ab", "bc", "▁a", "▁abc", "<0x78>", "<0xC3>", "<0xA9>"}
	types := []int32{2, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 6, 6, 6}
	scores := []float32{0, 0, 0, -1, -2, -3, -4, -20, -10, -5, -30, 0, 0, 0}
	cases := []struct {
		text   string
		prefix bool
		want   []int
	}{
		// "bc" outscores "ab": a|bc, not ab|c.
		{"abc", false, []int{4, 8}},
		// ▁abc: ▁a first (-5), then bc (-10), then ▁a|bc → ▁abc (-30).
		{"abc", true, []int{10}},
		{"a b", false, []int{4, 3, 5}},
		// x and é are not tokens: their bytes.
		{"xé", false, []int{11, 12, 13}},
		{"<s>ab", true, []int{1, 9, 5}},
	}
	for _, c := range cases {
		v := &Vocab{Model: "llama", Pre: "default", Tokens: tokens, Types: types, Scores: scores,
			BOS: 1, EOS: 2, UNK: 0, PAD: -1, AddBOS: true, AddSpacePrefix: c.prefix}
		p := hfTokenizer(t, v, HFOptions{})
		if got := p.Tokenizer.Encode(c.text, false); !slices.Equal(got, c.want) {
			t.Errorf("%q (prefix %v): %v, want %v", c.text, c.prefix, got, c.want)
		}
		if got := p.Tokenizer.Encode(c.text, true); len(got) == 0 || got[0] != 1 {
			t.Errorf("%q with special tokens: %v, want BOS first", c.text, got)
		}
	}
}

// TestVocabErrors: bad tokenizer metadata is an error that names the file
// and the key.
func TestVocabErrors(t *testing.T) {
	base := func() []kv {
		return []kv{
			{"tokenizer.ggml.model", "gpt2"},
			{"tokenizer.ggml.pre", "gpt-2"},
			{"tokenizer.ggml.tokens", []string{"a", "b", "ab", "<s>"}},
			{"tokenizer.ggml.token_type", []int32{1, 1, 1, 3}},
			{"tokenizer.ggml.merges", []string{"a b"}},
			{"tokenizer.ggml.bos_token_id", uint32(3)},
			{"tokenizer.ggml.eos_token_id", uint32(3)},
		}
	}
	set := func(key string, val any) func([]kv) []kv {
		return func(m []kv) []kv {
			for i := range m {
				if m[i].Key == key {
					m[i].Value = val
					return m
				}
			}
			return append(m, kv{key, val})
		}
	}
	drop := func(key string) func([]kv) []kv {
		return func(m []kv) []kv {
			return slices.DeleteFunc(m, func(x kv) bool { return x.Key == key })
		}
	}
	cases := []struct {
		name, key string
		edit      func([]kv) []kv
		want      error
	}{
		{"no tokenizer", "tokenizer.ggml.model", drop("tokenizer.ggml.model"), ErrFormat},
		{"model not a string", "tokenizer.ggml.model", set("tokenizer.ggml.model", uint32(2)), ErrFormat},
		{"unknown model", "tokenizer.ggml.model", set("tokenizer.ggml.model", "bert"), ErrUnsupported},
		{"unknown pre-tokenizer", "tokenizer.ggml.pre", set("tokenizer.ggml.pre", "my-own"), ErrUnsupported},
		{"no tokens", "tokenizer.ggml.tokens", drop("tokenizer.ggml.tokens"), ErrFormat},
		{"tokens not strings", "tokenizer.ggml.tokens", set("tokenizer.ggml.tokens", []int32{1, 2, 3, 4}), ErrFormat},
		{"empty vocabulary", "tokenizer.ggml.tokens", set("tokenizer.ggml.tokens", []string{}), ErrFormat},
		{"duplicate token", "tokenizer.ggml.tokens", set("tokenizer.ggml.tokens", []string{"a", "b", "a", "<s>"}), ErrFormat},
		{"too few types", "tokenizer.ggml.token_type", set("tokenizer.ggml.token_type", []int32{1, 1, 1}), ErrFormat},
		{"types not int32", "tokenizer.ggml.token_type", set("tokenizer.ggml.token_type", []float32{1, 1, 1, 3}), ErrFormat},
		{"too many scores", "tokenizer.ggml.scores", set("tokenizer.ggml.scores", []float32{0, 0, 0, 0, 0}), ErrFormat},
		{"scores not numbers", "tokenizer.ggml.scores", set("tokenizer.ggml.scores", []string{"a", "b", "c", "d"}), ErrFormat},
		{"no merges", "tokenizer.ggml.merges", drop("tokenizer.ggml.merges"), ErrFormat},
		{"merge without a space", "tokenizer.ggml.merges", set("tokenizer.ggml.merges", []string{"ab"}), ErrFormat},
		{"bos out of range", "tokenizer.ggml.bos_token_id", set("tokenizer.ggml.bos_token_id", uint32(4)), ErrFormat},
		{"pad out of range", "tokenizer.ggml.padding_token_id", set("tokenizer.ggml.padding_token_id", uint32(100)), ErrFormat},
		{"negative eos", "tokenizer.ggml.eos_token_id", set("tokenizer.ggml.eos_token_id", int32(-1)), ErrFormat},
		{"eos not an integer", "tokenizer.ggml.eos_token_id", set("tokenizer.ggml.eos_token_id", "3"), ErrFormat},
		{"add_bos without bos", "tokenizer.ggml.add_bos_token", func(m []kv) []kv {
			return set("tokenizer.ggml.add_bos_token", true)(drop("tokenizer.ggml.bos_token_id")(m))
		}, ErrFormat},
		{"add_bos not a bool", "tokenizer.ggml.add_bos_token", set("tokenizer.ggml.add_bos_token", uint32(1)), ErrFormat},
		{"add_eos", "tokenizer.ggml.add_eos_token", set("tokenizer.ggml.add_eos_token", true), ErrUnsupported},
		{"template not a string", "tokenizer.chat_template", set("tokenizer.chat_template", []string{"x"}), ErrFormat},
	}
	tmp := t.TempDir()
	ok := filepath.Join(tmp, "ok.gguf")
	writeMeta(t, ok, base())
	v := readVocab(t, ok)
	if p := hfTokenizer(t, v, HFOptions{}); !slices.Equal(p.Tokenizer.Encode("ab<s>ba", false), []int{2, 3, 1, 0}) {
		t.Errorf("the valid vocabulary: %v, want [2 3 1 0]", p.Tokenizer.Encode("ab<s>ba", false))
	}
	for i, c := range cases {
		path := filepath.Join(tmp, fmt.Sprintf("case%d.gguf", i))
		writeMeta(t, path, c.edit(base()))
		g, err := Open(path)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		_, err = g.Vocab()
		g.Close()
		var fe *FormatError
		switch {
		case err == nil:
			t.Errorf("%s: no error", c.name)
		case !errors.Is(err, c.want) || !errors.As(err, &fe):
			t.Errorf("%s: %v, want a *FormatError wrapping %v", c.name, err, c.want)
		case !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.key):
			t.Errorf("%s: %q does not name the file and %s", c.name, err, c.key)
		}
	}
}

// TestVocabDefaults: keys a file may leave out take llama.cpp's defaults.
func TestVocabDefaults(t *testing.T) {
	tmp := t.TempDir()
	cases := []struct {
		name    string
		meta    []kv
		check   func(v *Vocab) bool
		explain string
	}{
		{"llama without ids and flags", []kv{
			{"tokenizer.ggml.model", "llama"},
			{"tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>", "a"}},
			{"tokenizer.ggml.scores", []float32{0, 0, 0, -1}},
		}, func(v *Vocab) bool {
			return v.UNK == 0 && v.BOS == 1 && v.EOS == 2 && v.PAD == -1 && v.AddBOS && v.AddSpacePrefix && v.Pre == "default" &&
				slices.Equal(v.Types, []int32{1, 1, 1, 1})
		}, "unk 0, bos 1, eos 2, add_bos and add_space_prefix, types normal"},
		{"llama-bpe without add_bos", []kv{
			{"tokenizer.ggml.model", "gpt2"},
			{"tokenizer.ggml.pre", "llama-bpe"},
			{"tokenizer.ggml.tokens", []string{"a", "", "<|begin_of_text|>"}},
			{"tokenizer.ggml.merges", []string{}},
			{"tokenizer.ggml.bos_token_id", uint32(2)},
		}, func(v *Vocab) bool {
			return v.AddBOS && !v.AddSpacePrefix && v.EOS == -1 && v.UNK == -1 && v.Tokens[1] == "[EMPTY_1]"
		}, "add_bos, no eos or unk, the empty token renamed"},
		{"gpt2 without pre", []kv{
			{"tokenizer.ggml.model", "gpt2"},
			{"tokenizer.ggml.tokens", []string{"a"}},
			{"tokenizer.ggml.merges", []string{}},
		}, func(v *Vocab) bool { return v.Pre == "default" && !v.AddBOS && v.BOS == -1 }, "pre default, no BOS"},
		{"placeholder", PlaceholderVocab(300, 0, 1, 2).metadata(), func(v *Vocab) bool { return v.Placeholder }, "Placeholder"},
	}
	for i, c := range cases {
		path := filepath.Join(tmp, fmt.Sprintf("case%d.gguf", i))
		writeMeta(t, path, c.meta)
		if v := readVocab(t, path); !c.check(v) {
			t.Errorf("%s: %+v; want %s", c.name, *v, c.explain)
		}
	}
}
