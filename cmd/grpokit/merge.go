package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/grpokit/grpokit/gguf"
	"github.com/grpokit/grpokit/internal/interrupt"
	"github.com/grpokit/grpokit/model"
)

// mergeCmd is "grpokit merge": base + LoRA adapter → one Hugging Face
// folder (weights in the base's dtype, tokenizer files,
// generation_config.json, and constraint.json if the adapter has one).
func mergeCmd(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	base := fs.String("model", "", "base model folder")
	adapter := fs.String("adapter", "", "LoRA adapter folder (PEFT layout, final/ or checkpoint-N)")
	dst := fs.String("out", "", "output folder (created; must not hold files unless -overwrite)")
	dtype := fs.String("dtype", "", "weights dtype: F32, BF16 or F16 (default: the base's)")
	overwrite := fs.Bool("overwrite", false, "replace an -out folder that already holds files")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *base == "" || *adapter == "" || *dst == "" {
		return usageError{errors.New("grpokit merge: -model, -adapter and -out are required")}
	}
	if err := checkMergeOut(*dst, *overwrite, *base, *adapter); err != nil {
		return err
	}
	interrupt.SetUnsaved(ctx, fmt.Sprintf("the merge into %s (a temporary .%s.tmp-* folder beside it may be left: delete it)", *dst, filepath.Base(*dst)))
	return merge(*base, *adapter, *dst, *dtype, out)
}

// checkMergeOut refuses an output folder that would lose files: the base's
// or the adapter's folder or one holding them (always), or any folder that
// holds files unless overwrite.
func checkMergeOut(dst string, overwrite bool, inputs ...string) error {
	for _, in := range inputs {
		if within(in, dst) || within(folder(in), dst) { // folder: a checkpoint's policy/
			return fmt.Errorf("grpokit merge: -out %s is or holds the folder of %s: merging there would replace its files; choose another -out", dst, in)
		}
	}
	entries, err := os.ReadDir(dst)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("grpokit merge: -out: %w", err)
	}
	if len(entries) > 0 && !overwrite {
		return fmt.Errorf("grpokit merge: -out %s already holds %d files or folders (e.g. %s); choose another folder, or -overwrite to replace them",
			dst, len(entries), entries[0].Name())
	}
	return nil
}

// within reports whether path is folder dir or lies inside it, symbolic
// links resolved (a dir that does not exist holds nothing).
func within(path, dir string) bool {
	d, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return false
	}
	if p, err = filepath.Abs(p); err != nil {
		return false
	}
	if d, err = filepath.Abs(d); err != nil {
		return false
	}
	rel, err := filepath.Rel(d, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// merge writes the merged model into a temporary folder beside dst and
// renames it into place, so that dst is either what it was or the whole
// merged model, never half of it.
func merge(base, adapterDir, dst, dtype string, out io.Writer) error {
	parent := filepath.Dir(filepath.Clean(dst))
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dst)+".tmp-")
	if err != nil {
		return err
	}
	// Gone after the rename; left only by an error.
	defer os.RemoveAll(tmp)
	// MkdirTemp makes it 0700; a model folder is readable like any other.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	dtype, params, err := writeMerged(base, adapterDir, tmp, dtype)
	if err != nil {
		return err
	}
	if err := replaceDir(tmp, dst); err != nil {
		return fmt.Errorf("grpokit merge: %w", err)
	}
	fmt.Fprintf(out, "merged %s + %s → %s (%s, %d parameters)\n", base, adapterDir, dst, dtype, params)
	return nil
}

// replaceDir puts folder src at dst, moving an existing dst aside first and
// deleting it only once src is in place.
func replaceDir(src, dst string) error {
	if _, err := os.Stat(dst); errors.Is(err, fs.ErrNotExist) {
		return os.Rename(src, dst)
	}
	old := src + ".old"
	if err := os.Rename(dst, old); err != nil {
		return err
	}
	if err := os.Rename(src, dst); err != nil {
		_ = os.Rename(old, dst) // put it back
		return err
	}
	return os.RemoveAll(old)
}

// writeMerged writes base + adapter, merged, as a Hugging Face folder in
// dst, and returns the weights' dtype and the number of parameters.
func writeMerged(base, adapterDir, dst, dtype string) (string, int, error) {
	// The base stays as stored; each weight is merged in float32 and
	// written in turn, so only one float32 matrix is held at a time.
	l, err := loadModel(base, adapterDir, &model.Options{Storage: model.StorageAsStored}, os.Stderr)
	if err != nil {
		return "", 0, err
	}
	if l.adapter == nil {
		return "", 0, errors.New("grpokit merge: no adapter loaded")
	}
	switch {
	case dtype != "":
	case gguf.IsFile(base):
		dtype = "F32" // dequantized as it loads
	default:
		if dtype, err = model.WeightsDType(folder(base)); err != nil {
			return "", 0, err
		}
	}
	dtype = strings.ToUpper(dtype)
	cfg := l.model.Config()
	if err := model.SaveConfig(dst, cfg, dtype); err != nil {
		return "", 0, err
	}
	merged := func(name string) ([]float32, error) {
		data, _, err := l.adapter.MergedWeight(name)
		return data, err
	}
	if err := model.WriteSafetensorsFunc(filepath.Join(dst, "model.safetensors"), cfg.Weights(), dtype, merged); err != nil {
		return "", 0, err
	}
	if err := l.tok.WriteFiles(dst); err != nil {
		return "", 0, err
	}
	if err := model.SaveConstraint(dst, l.constraint); err != nil {
		return "", 0, err
	}
	return dtype, l.model.NumParams(), nil
}
