// Command randomhf writes a Hugging Face model folder with random weights
// at the shapes of a real config.json, for measurements at real sizes
// without downloading a checkpoint:
//
//	go run ./bench/randomhf -config Qwen3-0.6B/config.json -tokenizer DIR -out /tmp/qwen3-0.6b
//
// The folder gets config.json (the parsed config as model.Config writes
// it; a multimodal Gemma 3 config becomes its gemma3_text language model),
// model.safetensors (bf16 by default, written tensor by tensor with
// model.WriteRandomHF, so an 8B shape needs only a few MB of memory) and
// the tokenizer files found in -tokenizer: tokenizer.json (or
// tokenizer.json.gz, or NAME.tokenizer.json.gz with -tokenizer-prefix NAME,
// the layout of ../shared/tokenizers), tokenizer_config.json and
// generation_config.json when present.
package main

import (
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/grpokit/grpokit/internal/atomicfile"
	"github.com/grpokit/grpokit/model"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "randomhf:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("randomhf", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "a real config.json (required)")
	tokDir := fs.String("tokenizer", "", "folder with tokenizer.json[.gz] and tokenizer_config.json (required)")
	prefix := fs.String("tokenizer-prefix", "", "file prefix in -tokenizer, e.g. qwen3 for qwen3.tokenizer.json.gz")
	out := fs.String("out", "", "output folder (required)")
	seed := fs.Uint64("seed", 1, "random seed")
	dtype := fs.String("dtype", "bf16", "weight dtype: bf16 or f32")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cfgPath == "" || *tokDir == "" || *out == "" {
		fs.Usage()
		return errors.New("-config, -tokenizer and -out are required")
	}
	cfg, err := model.ReadConfig(*cfgPath)
	if err != nil {
		return err
	}
	start := time.Now()
	if err := model.WriteRandomHF(*out, cfg, *seed, *dtype); err != nil {
		return err
	}
	if err := copyTokenizer(*tokDir, *prefix, *out); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %s, %d parameters (%s), in %s\n", *out, cfg.ModelType, cfg.NumParams(), *dtype, time.Since(start).Round(time.Millisecond))
	return nil
}

// copyTokenizer copies the tokenizer files, decompressing a .gz.
func copyTokenizer(dir, prefix, out string) error {
	name := func(base string) string {
		if prefix != "" {
			return filepath.Join(dir, prefix+"."+base)
		}
		return filepath.Join(dir, base)
	}
	found := false
	for _, src := range []string{name("tokenizer.json"), name("tokenizer.json.gz")} {
		if _, err := os.Stat(src); err == nil {
			if err := copyFile(src, filepath.Join(out, "tokenizer.json")); err != nil {
				return err
			}
			found = true
			break
		}
	}
	if !found {
		return fmt.Errorf("no tokenizer.json or tokenizer.json.gz in %s (prefix %q)", dir, prefix)
	}
	for _, base := range []string{"tokenizer_config.json", "generation_config.json", "chat_template.jinja", "special_tokens_map.json"} {
		if _, err := os.Stat(name(base)); err == nil {
			if err := copyFile(name(base), filepath.Join(out, base)); err != nil {
				return err
			}
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	var r io.Reader = in
	if filepath.Ext(src) == ".gz" {
		zr, err := gzip.NewReader(in)
		if err != nil {
			return fmt.Errorf("%s: %w", src, err)
		}
		defer zr.Close()
		r = zr
	}
	return atomicfile.Write(dst, func(f *os.File) error {
		if _, err := io.Copy(f, r); err != nil {
			return fmt.Errorf("copy %s: %w", src, err)
		}
		return nil
	})
}
