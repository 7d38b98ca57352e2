package gguf

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/grpokit/grpokit/model"
)

// DTypes are the weight types Write accepts. Q8_0 and Q4_0 are ggml's
// block formats (32 values and one F16 scale per block); norms, biases and
// matrices whose rows are not a multiple of 32 long stay F32 or F16 as
// llama.cpp's own converter keeps them.
var DTypes = []string{"F32", "F16", "BF16", "Q8_0", "Q4_0"}

// fileTypes are general.file_type's values (llama_ftype) for each dtype.
var fileTypes = map[string]uint32{"F32": 0, "F16": 1, "Q4_0": 2, "Q8_0": 7, "BF16": 32}

// Options configure Write.
type Options struct {
	// DType is the weights' type, one of DTypes (required).
	DType string
	// Vocab is the tokenizer to store (required): NewVocab, or
	// PlaceholderVocab for a model without one.
	Vocab *Vocab
	// Name is general.name (default: the file's base name without ".gguf").
	Name string
	// Overwrite replaces an existing file at the path; without it an
	// existing file is an error.
	Overwrite bool
	// Logger receives a line per written file (nil: slog.Default()).
	Logger *slog.Logger
}

// Result describes a written file.
type Result struct {
	// Path is where the file is; Bytes its size.
	Path  string
	Bytes int64
	// Arch is general.architecture.
	Arch string
	// Tensors counts the tensors by stored type ("F32", "Q8_0", ...).
	Tensors map[string]int
	// Warnings name what llama.cpp will compute differently from the model
	// (a configuration its graph for the family cannot express).
	Warnings []string
}

// WeightFunc returns the values of one weight by its Hugging Face name
// (as model.Config.Weights lists them), in float32, row-major, in a slice
// Write may change (model.Model.Weight and lora.Adapter.MergedWeight
// return fresh copies). Write asks for each weight once, and holds one at
// a time.
type WeightFunc func(name string) ([]float32, error)

// ErrExists is returned (wrapped) when the output file exists and
// Options.Overwrite is false.
var ErrExists = errors.New("gguf: output exists")

// Write writes a GGUF v3 file at path for the model cfg, whose weights
// come from weight, for llama.cpp and Ollama: general.architecture and the
// hyperparameter keys, tensor names and layouts of llama.cpp's graph for
// the family (llama, qwen2, qwen3, gemma3), and the tokenizer keys of
// opts.Vocab. The file is written under a temporary name in the same
// folder and renamed into place only when complete: path is either left
// as it was or holds the whole file.
func Write(ctx context.Context, path string, cfg model.Config, weight WeightFunc, opts Options) (*Result, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	dtype := strings.ToUpper(opts.DType)
	if !slices.Contains(DTypes, dtype) {
		return nil, fmt.Errorf("%w: dtype %q (want one of %s)", ErrUnsupported, opts.DType, strings.Join(DTypes, ", "))
	}
	if opts.Vocab == nil {
		return nil, errors.New("gguf: Options.Vocab is required (NewVocab, or PlaceholderVocab for a model without a tokenizer)")
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	fam, err := lookupFamily(cfg)
	if err != nil {
		return nil, err
	}
	if n := len(opts.Vocab.Tokens); n != cfg.VocabSize {
		return nil, fmt.Errorf("gguf: the vocabulary has %d tokens, the model %d embedding rows (vocab_size)", n, cfg.VocabSize)
	}
	if err := checkOutput(path, opts.Overwrite); err != nil {
		return nil, err
	}

	specs := cfg.Weights()
	infos := make([]TensorInfo, 0, len(specs)+1)
	hfNames := make([]string, 0, len(specs)+1)
	res := &Result{Path: path, Arch: fam.arch, Tensors: map[string]int{}, Warnings: fam.llamaCppDifferences(cfg)}
	if rs := cfg.RopeScaling; rs != nil && rs.Kind() == "llama3" {
		infos = append(infos, TensorInfo{Name: "rope_freqs.weight", Shape: []int{cfg.HeadDim / 2}, Type: tF32})
		hfNames = append(hfNames, "")
	}
	for _, s := range specs {
		name, err := fam.tensorName(s.Name)
		if err != nil {
			return nil, err
		}
		infos = append(infos, TensorInfo{Name: name, Shape: s.Shape, Type: storedType(dtype, name, s.Shape)})
		hfNames = append(hfNames, s.Name)
	}
	for _, t := range infos {
		res.Tensors[t.Type.String()]++
	}

	name := opts.Name
	if name == "" {
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	meta := []kv{
		{"general.architecture", fam.arch},
		{"general.name", name},
		{"general.file_type", fileTypes[dtype]},
	}
	if dtype == "Q8_0" || dtype == "Q4_0" {
		meta = append(meta, kv{"general.quantization_version", uint32(2)})
	}
	meta = append(meta, fam.hyperparameters(cfg)...)
	meta = append(meta, opts.Vocab.metadata()...)

	err = writeAtomic(path, opts.Overwrite, func(f *os.File) error {
		e := newEncoder(f)
		if err := e.header(meta, infos); err != nil {
			return err
		}
		var buf []byte
		for i, t := range infos {
			if err := ctx.Err(); err != nil {
				return err
			}
			var x []float32
			if hfNames[i] == "" {
				x = ropeFreqs(cfg)
			} else {
				if x, err = weight(hfNames[i]); err != nil {
					return fmt.Errorf("weight %s: %w", hfNames[i], err)
				}
				if len(x) != t.numel() {
					return fmt.Errorf("weight %s: %d values, want %d (shape %v)", hfNames[i], len(x), t.numel(), t.Shape)
				}
				fam.transform(cfg, hfNames[i], x)
			}
			// Encoded in chunks (a multiple of every block size), so that
			// only the float32 tensor is held whole.
			for len(x) > 0 {
				n := min(len(x), 1<<20)
				buf = encode(buf[:0], t.Type, x[:n])
				e.bytes(buf)
				x = x[n:]
			}
			e.pad()
		}
		if err := e.flush(); err != nil {
			return err
		}
		res.Bytes = e.n
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, w := range res.Warnings {
		log.Warn("gguf: " + w)
	}
	log.Info("gguf: wrote", "path", path, "arch", fam.arch, "dtype", dtype, "bytes", res.Bytes)
	return res, nil
}

// storedType is the type a tensor is stored as for dtype: vectors (norms,
// biases) always F32; a matrix whose rows do not split into 32-value
// blocks F16 under Q8_0/Q4_0; under Q4_0 the embedding and output
// matrices Q8_0, as they are the most sensitive.
func storedType(dtype, name string, shape []int) TensorType {
	if len(shape) < 2 {
		return tF32
	}
	switch dtype {
	case "F32":
		return tF32
	case "F16":
		return tF16
	case "BF16":
		return tBF16
	}
	if shape[len(shape)-1]%32 != 0 {
		return tF16
	}
	if dtype == "Q4_0" && (name == "token_embd.weight" || name == "output.weight") {
		return tQ8_0
	}
	if dtype == "Q4_0" {
		return tQ4_0
	}
	return tQ8_0
}

// checkOutput refuses a path that is a folder, or an existing file unless
// overwrite.
func checkOutput(path string, overwrite bool) error {
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("gguf: %w", err)
	case st.IsDir():
		return fmt.Errorf("gguf: output %s is a folder; give a file name such as %s", path, filepath.Join(path, "model.gguf"))
	case !overwrite:
		return fmt.Errorf("%w: %s already exists; choose another name, or overwrite it", ErrExists, path)
	}
	return nil
}

// writeAtomic writes path through a temporary file in the same folder,
// synced and renamed into place only when write succeeded; without
// overwrite a file that appeared at path meanwhile is kept.
func writeAtomic(path string, overwrite bool, write func(f *os.File) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	tmp := f.Name()
	fail := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("gguf: write %s: %w", path, err)
	}
	if err := write(f); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		return fail(err)
	}
	if err := os.Chmod(tmp, 0o644); err != nil {
		return fail(err)
	}
	if !overwrite {
		// A hard link fails if path exists; where links are not available
		// the earlier check stands.
		if err := os.Link(tmp, path); err == nil {
			os.Remove(tmp)
			return nil
		} else if errors.Is(err, fs.ErrExist) {
			os.Remove(tmp)
			return fmt.Errorf("%w: %s appeared while writing; the new file was not kept", ErrExists, path)
		}
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}
