// Command decode times generation on a real model the way llama.cpp's
// batched benchmark does: B sequences of a fixed prompt, prefilled at once,
// then a fixed number of new tokens each (greedy, end-of-sequence ignored),
// on grpokit's pure-Go backend. Prefill tokens/s is B·prompt over the time
// of a one-token generation; decode tokens/s is B·new over the time a
// (new+1)-token generation takes beyond it. bench/llamacpp_decode.py
// measures llama.cpp the same way on the same GGUF file.
//
//	go run ./bench/decode -model smollm2-F32.gguf [-batch 1,8,32] [-prompt 64] [-new 64] [-json out.json]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grpokit/grpokit/gguf"
	"github.com/grpokit/grpokit/internal/gemm"
	"github.com/grpokit/grpokit/model"
)

// result is one batch size's figures (medians over the repetitions).
type result struct {
	Batch         int     `json:"batch"`
	PrefillTokS   float64 `json:"prefill_tok_s"`
	DecodeTokS    float64 `json:"decode_tok_s"`
	PrefillSecond float64 `json:"prefill_s"`
	DecodeSecond  float64 `json:"decode_s"`
}

func main() {
	path := flag.String("model", "", "GGUF file or Hugging Face model folder")
	batches := flag.String("batch", "1,8,32", "batch sizes, comma-separated")
	promptLen := flag.Int("prompt", 64, "prompt tokens per sequence")
	newTokens := flag.Int("new", 64, "new tokens per sequence")
	reps := flag.Int("reps", 3, "timed repetitions per batch size (median reported)")
	out := flag.String("json", "", "also write the results to this JSON file")
	llama := flag.String("llama", "", "JSON written by bench/llamacpp_decode.py on the same file: print both and the ratios")
	flag.Parse()
	ref, err := readLlama(*llama)
	if err != nil {
		log.Fatal(err)
	}
	if *path == "" {
		log.Fatal("decode: -model is required")
	}
	var m *model.Model
	if strings.HasSuffix(*path, ".gguf") {
		m, err = gguf.LoadModel(*path, &model.Options{Storage: model.StorageGGUF})
	} else {
		m, err = model.Load(*path, nil)
	}
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("grpokit decode: %s, %s backend, gemm %s, GOMAXPROCS %d, prompt %d, new %d\n",
		*path, m.Backend().Name(), gemm.Active(), runtime.GOMAXPROCS(0), *promptLen, *newTokens)
	var results []result
	for _, f := range strings.Split(*batches, ",") {
		b, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || b < 1 {
			log.Fatalf("decode: bad batch size %q", f)
		}
		r, err := measure(m, b, *promptLen, *newTokens, *reps)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("batch %2d: prefill %8.1f tok/s, decode %8.1f tok/s\n", b, r.PrefillTokS, r.DecodeTokS)
		if l, ok := ref[b]; ok {
			fmt.Printf("          llama.cpp (%d threads): prefill %8.1f tok/s, decode %8.1f tok/s; grpokit ÷ llama.cpp: prefill %.2f×, decode %.2f×\n",
				l.Threads, l.PrefillTokS, l.DecodeTokS, r.PrefillTokS/l.PrefillTokS, r.DecodeTokS/l.DecodeTokS)
		}
		results = append(results, r)
	}
	if *out != "" {
		data, _ := json.MarshalIndent(map[string]any{"model": *path, "prompt": *promptLen, "new": *newTokens, "gemm": gemm.Active(), "results": results}, "", " ")
		if err := os.WriteFile(*out, data, 0o644); err != nil {
			log.Fatal(err)
		}
	}
}

// llamaResult is one batch size of bench/llamacpp_decode.py's JSON.
type llamaResult struct {
	Batch       int     `json:"batch"`
	Threads     int     `json:"threads"`
	PrefillTokS float64 `json:"prefill_tok_s"`
	DecodeTokS  float64 `json:"decode_tok_s"`
}

// readLlama reads llama.cpp's figures by batch size ("" gives none).
func readLlama(path string) (map[int]llamaResult, error) {
	out := map[int]llamaResult{}
	if path == "" {
		return out, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Results []llamaResult `json:"results"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("decode: %s: %w", path, err)
	}
	for _, r := range f.Results {
		out[r.Batch] = r
	}
	return out, nil
}

// measure times b sequences of promptLen tokens (fixed ids, distinct rows)
// generating 1 and newTokens+1 tokens greedily, end-of-sequence ignored,
// after one untimed call of each (compilation).
func measure(m *model.Model, b, promptLen, newTokens, reps int) (result, error) {
	vocab := m.Config().VocabSize
	prompts := make([][]int, b)
	for i := range prompts {
		prompts[i] = make([]int, promptLen)
		for j := range prompts[i] {
			// bench/llamacpp_decode.py uses the same ids.
			prompts[i][j] = 100 + (i*7919+j*104729)%(vocab-200)
		}
	}
	run := func(n int) (float64, error) {
		start := time.Now()
		out, err := m.Generate(context.Background(), prompts, model.GenerateConfig{MaxNewTokens: n, IgnoreEOS: true})
		if err != nil {
			return 0, err
		}
		for _, c := range out {
			if len(c.Tokens) != n {
				return 0, fmt.Errorf("decode: a sequence stopped after %d of %d tokens", len(c.Tokens), n)
			}
		}
		return time.Since(start).Seconds(), nil
	}
	var pre, dec []float64
	for i := range reps + 1 {
		t1, err := run(1)
		if err != nil {
			return result{}, err
		}
		tn, err := run(newTokens + 1)
		if err != nil {
			return result{}, err
		}
		if i > 0 { // the first pair compiles
			pre, dec = append(pre, t1), append(dec, tn-t1)
		}
	}
	r := result{Batch: b, PrefillSecond: median(pre), DecodeSecond: median(dec)}
	r.PrefillTokS = float64(b*promptLen) / r.PrefillSecond
	r.DecodeTokS = float64(b*newTokens) / r.DecodeSecond
	return r, nil
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}
