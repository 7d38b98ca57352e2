package tokenizer

import (
	"strings"
	"testing"
)

// benchText is ~600 KB: the corpus strings (prose, code, CJK, emoji,
// digits) joined with ChatML special tokens, one every ~50 bytes.
func benchText(f *fixtureSet) string {
	var b strings.Builder
	for b.Len() < 600_000 {
		for _, s := range f.corpus {
			b.WriteString("<|im_start|>user\n")
			b.WriteString(s)
			b.WriteString("<|im_end|>\n")
		}
	}
	return b.String()
}

func benchEncode(b *testing.B, model, text string) {
	f := fixtures(b)
	tk := f.toks[model]
	n := len(tk.Encode(text, false))
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tk.Encode(text, false)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

func BenchmarkEncode(b *testing.B) {
	f := fixtures(b)
	text := benchText(f)
	for _, m := range fixtureModels {
		b.Run(m, func(b *testing.B) { benchEncode(b, m, text) })
	}
	// Gemma's pre-tokenizer leaves a text with no added token as one word:
	// 600 KB of prose without specials must stay near-linear.
	// Compare tokens/s of the 60 KB and 600 KB runs to see it scale.
	unit := "The quick brown fox jumps over the lazy dog. naïve café 12345 "
	b.Run("gemma3-one-word-60KB", func(b *testing.B) { benchEncode(b, "gemma3", strings.Repeat(unit, 1_000)) })
	b.Run("gemma3-one-word-600KB", func(b *testing.B) { benchEncode(b, "gemma3", strings.Repeat(unit, 10_000)) })
	// Many special tokens back to back.
	specials := strings.Repeat("<|im_start|><|im_end|>x", 30_000)
	b.Run("qwen3-specials", func(b *testing.B) { benchEncode(b, "qwen3", specials) })
}

func BenchmarkDecode(b *testing.B) {
	f := fixtures(b)
	text := benchText(f)
	for _, m := range fixtureModels {
		b.Run(m, func(b *testing.B) {
			tk := f.toks[m]
			ids := tk.Encode(text, false)
			b.SetBytes(int64(len(text)))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tk.Decode(ids, false)
			}
			b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

func BenchmarkEncodeBatch(b *testing.B) {
	f := fixtures(b)
	texts := make([]string, 256)
	for i := range texts {
		texts[i] = strings.Join(f.corpus, "\n")
	}
	tk := f.toks["llama31"]
	n := 0
	for _, ids := range tk.EncodeBatch(texts, false) {
		n += len(ids)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tk.EncodeBatch(texts, false)
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkLoad measures reading the three gzipped tokenizer.json files.
func BenchmarkLoad(b *testing.B) {
	fixtures(b)
	for i := 0; i < b.N; i++ {
		for _, m := range fixtureModels {
			if _, err := FromFile(sharedDir() + "/tokenizers/" + m + ".tokenizer.json.gz"); err != nil {
				b.Fatal(err)
			}
		}
	}
}
