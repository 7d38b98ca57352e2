package gguf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/grpokit/grpokit/model"
)

// ImportOptions configure Import.
type ImportOptions struct {
	// DType is the safetensors type of the weights written: "F32" (the
	// default: the file's values exactly, whatever their GGUF type) or
	// "BF16" (half the size; rounded to nearest even).
	DType string
	// Generation are sampling defaults for generation_config.json (an
	// Ollama model's parameters); nil writes only the token ids.
	Generation *GenerationDefaults
	// Overwrite replaces an existing output folder; without it a folder
	// that exists and is not empty is an error.
	Overwrite bool
	// Logger receives a line for the written folder (nil: slog.Default()).
	Logger *slog.Logger
}

// ImportResult describes an imported model.
type ImportResult struct {
	// Dir is the Hugging Face folder written.
	Dir string
	// Config is the model's configuration (config.json).
	Config model.Config
	// Tensors counts the file's tensors by GGUF type ("Q4_1", "F32", ...).
	Tensors map[string]int
}

// Import writes the model in the GGUF file at path as a Hugging Face
// folder dir: config.json, model.safetensors (every weight dequantized as
// ggml does, in the Hugging Face layout), tokenizer.json and
// tokenizer_config.json (the file's vocabulary, pre-tokenizer, special
// tokens and chat template) and generation_config.json; grpokit,
// transformers and PEFT load it as any checkpoint. The folder is written
// beside dir under a temporary name and renamed into place when complete.
func Import(ctx context.Context, path, dir string, opts ImportOptions) (*ImportResult, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	dtype := strings.ToUpper(opts.DType)
	if dtype == "" {
		dtype = "F32"
	}
	if dtype != "F32" && dtype != "BF16" {
		return nil, fmt.Errorf("%w: import dtype %q (want F32 or BF16)", ErrUnsupported, opts.DType)
	}
	if err := checkOutputDir(dir, opts.Overwrite); err != nil {
		return nil, err
	}
	g, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer g.Close()
	cfg, err := g.ModelConfig()
	if err != nil {
		return nil, err
	}
	src, err := g.Weights(cfg)
	if err != nil {
		return nil, err
	}
	tok, err := g.hfTokenizerFiles()
	if err != nil {
		return nil, err
	}
	res := &ImportResult{Dir: dir, Config: cfg, Tensors: map[string]int{}}
	for _, t := range g.Tensors {
		res.Tensors[t.Type.String()]++
	}

	parent := filepath.Dir(filepath.Clean(dir))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp*")
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	fail := func(err error) (*ImportResult, error) {
		os.RemoveAll(tmp)
		return nil, fmt.Errorf("gguf: import %s into %s: %w", path, dir, err)
	}
	if err := model.SaveConfig(tmp, cfg, dtype); err != nil {
		return fail(err)
	}
	specs := cfg.Weights()
	shapes := make(map[string][]int, len(specs))
	for _, s := range specs {
		shapes[s.Name] = s.Shape
	}
	err = model.WriteSafetensorsFunc(filepath.Join(tmp, "model.safetensors"), specs, dtype, func(name string) ([]float32, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return src(name, shapes[name])
	})
	if err != nil {
		return fail(err)
	}
	for name, data := range tok {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o644); err != nil {
			return fail(err)
		}
	}
	gen, err := generationConfig(cfg, g, opts.Generation)
	if err != nil {
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "generation_config.json"), gen, 0o644); err != nil {
		return fail(err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fail(err)
	}
	if opts.Overwrite {
		if err := os.RemoveAll(dir); err != nil {
			return fail(err)
		}
	} else {
		os.Remove(dir) // an empty folder, which checkOutputDir allowed
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fail(err)
	}
	log.Info("gguf: imported", "file", path, "dir", dir, "model_type", cfg.ModelType, "dtype", dtype)
	return res, nil
}

// checkOutputDir refuses an output that is a file, or a folder with
// anything in it unless overwrite.
func checkOutputDir(dir string, overwrite bool) error {
	if dir == "" {
		return errors.New("gguf: the output folder is required")
	}
	st, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("gguf: %w", err)
	case !st.IsDir():
		return fmt.Errorf("gguf: output %s is a file, not a folder", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	if len(entries) > 0 && !overwrite {
		return fmt.Errorf("%w: %s is not empty; choose another folder, or overwrite it", ErrExists, dir)
	}
	return nil
}

// generationConfig is generation_config.json for the imported model: the
// special token ids and any sampling defaults.
func generationConfig(cfg model.Config, g *File, gen *GenerationDefaults) ([]byte, error) {
	out := map[string]any{"_from_model_config": true}
	if cfg.BOSTokenID >= 0 {
		if _, ok := g.Lookup("tokenizer.ggml.bos_token_id"); ok {
			out["bos_token_id"] = cfg.BOSTokenID
		}
	}
	if len(cfg.EOSTokenIDs) > 0 {
		out["eos_token_id"] = cfg.EOSTokenIDs[0]
	}
	if pad, ok, err := g.Int("tokenizer.ggml.padding_token_id"); err != nil {
		return nil, err
	} else if ok {
		out["pad_token_id"] = pad
	}
	if gen != nil {
		set := func(k string, v any, ok bool) {
			if ok {
				out[k] = v
			}
		}
		set("temperature", deref(gen.Temperature), gen.Temperature != nil)
		set("top_p", deref(gen.TopP), gen.TopP != nil)
		set("top_k", deref(gen.TopK), gen.TopK != nil)
		set("min_p", deref(gen.MinP), gen.MinP != nil)
		set("repetition_penalty", deref(gen.RepetitionPenalty), gen.RepetitionPenalty != nil)
		set("do_sample", deref(gen.DoSample), gen.DoSample != nil)
	}
	return json.MarshalIndent(out, "", "  ")
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
