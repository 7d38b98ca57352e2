package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"

	"github.com/grpokit/grpokit/gguf"
)

// exportCmd is "grpokit export": a model folder, a checkpoint, or a base
// model plus a LoRA adapter (merged on the way) → one GGUF file for
// llama.cpp and Ollama, and an Ollama Modelfile beside it.
func exportCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	dir := fs.String("model", "", "model folder (a Hugging Face folder, a saved final/ or a checkpoint-N)")
	adapter := fs.String("adapter", "", "LoRA adapter folder to merge in (PEFT layout)")
	format := fs.String("format", "gguf", "output format: gguf")
	dst := fs.String("out", "", "output file, e.g. model.gguf")
	dtype := fs.String("dtype", "", "weights type: F32, F16, BF16, Q8_0 or Q4_0 (default: the model's)")
	name := fs.String("name", "", "general.name in the file (default: the output's base name)")
	modelfile := fs.String("modelfile", "Modelfile", "name of the Ollama Modelfile written beside -out (\"\" for none)")
	overwrite := fs.Bool("overwrite", false, "replace an existing -out file and Modelfile")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" || *dst == "" {
		return usageError{errors.New("grpokit export: -model and -out are required")}
	}
	if !strings.EqualFold(*format, "gguf") {
		return usageError{fmt.Errorf("grpokit export: -format %q: the one format is gguf", *format)}
	}
	mf := ""
	if *modelfile != "" {
		mf = filepath.Join(filepath.Dir(*dst), *modelfile)
	}
	res, err := gguf.Export(ctx, gguf.Source{ModelDir: *dir, AdapterDir: *adapter}, *dst, gguf.ExportOptions{
		DType: *dtype, Name: *name, Modelfile: mf, Overwrite: *overwrite,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), // the command prints its own lines
	})
	if errors.Is(err, gguf.ErrExists) {
		return fmt.Errorf("grpokit export: %w (-overwrite replaces it)", err)
	}
	if err != nil {
		return fmt.Errorf("grpokit export: %w", err)
	}
	src := *dir
	if *adapter != "" {
		src += " + " + *adapter
	}
	fmt.Fprintf(out, "exported %s → %s (GGUF v3, %s, %s: %s; %.1f MB)\n", src, *dst, res.Arch, res.DType,
		tensorCounts(res.Tensors), float64(res.Bytes)/1e6)
	for _, w := range res.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	if res.Placeholder {
		fmt.Fprintf(out, "note: %s has no tokenizer.json, so the file holds a placeholder vocabulary of %d tokens: "+
			"llama.cpp runs it from token ids, but its text means nothing\n", res.TokenizerDir, res.VocabSize)
	}
	if mf != "" {
		fmt.Fprintf(out, "wrote %s: ollama create NAME -f %s, then ollama run NAME\n", mf, mf)
	}
	return nil
}

// tensorCounts writes {"F32": 5, "Q8_0": 9} as "9 Q8_0 + 5 F32 tensors":
// the most common type first.
func tensorCounts(m map[string]int) string {
	keys := sortedKeys(m)
	slices.SortStableFunc(keys, func(a, b string) int { return m[b] - m[a] })
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
	}
	return strings.Join(parts, " + ") + " tensors"
}
