package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/grpokit/grpokit/gguf"
)

// importCmd is "grpokit import": a GGUF file (llama.cpp's format), or a
// model in Ollama's local store, → a Hugging Face folder that grpokit,
// transformers and PEFT load.
func importCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	file := fs.String("gguf", "", "the GGUF file to import")
	name := fs.String("ollama", "", "a model in Ollama's store (NAME[:TAG], as `ollama list` shows it); $OLLAMA_MODELS or ~/.ollama/models")
	dst := fs.String("out", "", "the Hugging Face folder to write")
	dtype := fs.String("dtype", "F32", "safetensors type of the weights: F32 (the file's values exactly) or BF16")
	overwrite := fs.Bool("overwrite", false, "replace an existing -out folder")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*file == "") == (*name == "") || *dst == "" {
		return usageError{errors.New("grpokit import: give -out and one of -gguf FILE or -ollama NAME")}
	}
	opts := gguf.ImportOptions{DType: *dtype, Overwrite: *overwrite,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))} // the command prints its own lines
	src := *file
	if *name != "" {
		m, err := gguf.FindOllama(*name, "")
		if err != nil {
			return fmt.Errorf("grpokit import: %w", err)
		}
		src, opts.Generation = m.Model, m.Generation()
		fmt.Fprintf(out, "ollama: %s is %s\n", m.Name, m.Model)
	} else if !gguf.IsFile(src) {
		if _, err := os.Stat(src); err != nil {
			return fmt.Errorf("grpokit import: %w", err)
		}
	}
	res, err := gguf.Import(ctx, src, *dst, opts)
	if errors.Is(err, gguf.ErrExists) {
		return fmt.Errorf("grpokit import: %w (-overwrite replaces it)", err)
	}
	if err != nil {
		return fmt.Errorf("grpokit import: %w", err)
	}
	c := res.Config
	fmt.Fprintf(out, "imported %s → %s (%s, %d layers, hidden %d, vocabulary %d; %s; weights %s)\n", src, *dst, c.ModelType,
		c.NumHiddenLayers, c.HiddenSize, c.VocabSize, tensorCounts(res.Tensors), *dtype)
	return nil
}
