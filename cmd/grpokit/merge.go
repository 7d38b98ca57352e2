package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/grpokit/grpokit/model"
)

// mergeCmd is "grpokit merge": base + LoRA adapter → one Hugging Face
// folder (weights in the base's dtype, tokenizer files,
// generation_config.json, and constraint.json if the adapter has one).
func mergeCmd(_ context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("merge", flag.ContinueOnError)
	base := fs.String("model", "", "base model folder")
	adapter := fs.String("adapter", "", "LoRA adapter folder (PEFT layout, final/ or checkpoint-N)")
	dst := fs.String("out", "", "output folder (created)")
	dtype := fs.String("dtype", "", "weights dtype: F32, BF16 or F16 (default: the base's)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *base == "" || *adapter == "" || *dst == "" {
		return usageError{errors.New("grpokit merge: -model, -adapter and -out are required")}
	}
	return merge(*base, *adapter, *dst, *dtype, out)
}

func merge(base, adapterDir, dst, dtype string, out io.Writer) error {
	l, err := loadModel(base, adapterDir, os.Stderr)
	if err != nil {
		return err
	}
	if l.adapter == nil {
		return errors.New("grpokit merge: no adapter loaded")
	}
	if dtype == "" {
		if dtype, err = model.WeightsDType(folder(base)); err != nil {
			return err
		}
	}
	dtype = strings.ToUpper(dtype)
	if err := l.adapter.Merge(); err != nil {
		return err
	}
	cfg := l.model.Config()
	var ts []model.NamedTensor
	for _, w := range cfg.Weights() {
		data, shape, err := l.model.Weight(w.Name)
		if err != nil {
			return err
		}
		ts = append(ts, model.NamedTensor{Name: w.Name, Shape: shape, Data: data})
	}
	if err := model.SaveHF(dst, cfg, nil); err != nil {
		return err
	}
	if err := model.WriteSafetensorsAs(filepath.Join(dst, "model.safetensors"), ts, dtype); err != nil {
		return err
	}
	if err := setTorchDType(filepath.Join(dst, "config.json"), dtype); err != nil {
		return err
	}
	if err := l.tok.WriteFiles(dst); err != nil {
		return err
	}
	if err := model.SaveConstraint(dst, l.constraint); err != nil {
		return err
	}
	fmt.Fprintf(out, "merged %s + %s → %s (%s, %d parameters)\n", base, adapterDir, dst, dtype, l.model.NumParams())
	return nil
}

// setTorchDType records the weights' dtype in config.json's torch_dtype.
func setTorchDType(path, dtype string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("grpokit: %s: %w", path, err)
	}
	m["torch_dtype"] = map[string]string{"F32": "float32", "BF16": "bfloat16", "F16": "float16"}[dtype]
	b, err = json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
