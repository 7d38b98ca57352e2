package gguf

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/grpokit/grpokit/internal/regfile"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/tokenizer"
)

// Source is the model Export writes.
type Source struct {
	// ModelDir is a Hugging Face model folder, a saved final/, a
	// checkpoint-N folder (its policy/ subfolder is read), or a GGUF file.
	ModelDir string
	// AdapterDir is a PEFT LoRA adapter folder to merge into the model's
	// weights ("" for none). Its tokenizer and generation_config.json are
	// used when it has them.
	AdapterDir string
}

// ExportOptions configure Export.
type ExportOptions struct {
	// DType is the weights' type, one of DTypes; "" keeps the model's
	// (F32, F16 or BF16).
	DType string
	// Name is general.name (default: the file's base name).
	Name string
	// Modelfile, when set, is the path of an Ollama Modelfile to write for
	// the GGUF file (see Modelfile; ModelfileName gives the usual name
	// beside it). A model folder recording plain-text prompts
	// (model.PlainPrompts: the adapter's folder, else the model's) gets a
	// TEMPLATE sending the prompt as it is.
	Modelfile string
	// Overwrite replaces existing output files; without it they are errors.
	Overwrite bool
	// Model are the options the model is loaded with (nil: its weights as
	// stored, the least memory).
	Model *model.Options
	// Logger as in Options.
	Logger *slog.Logger
}

// ExportResult describes what Export wrote.
type ExportResult struct {
	Result
	// DType is the weights' type.
	DType string
	// Placeholder reports that the model folder had no tokenizer.json and
	// the file holds PlaceholderVocab.
	Placeholder bool
	// TokenizerDir is the folder the tokenizer came from (or was looked
	// for in).
	TokenizerDir string
	// VocabSize is the number of tokens in the file.
	VocabSize int
}

// Export writes the model of src as a GGUF file at path (see Write), the
// adapter merged in one weight at a time so that only one float32 matrix
// is held besides the model as stored, with the tokenizer found beside it
// (a PlaceholderVocab when there is none) and, with opts.Modelfile, an
// Ollama Modelfile. The model may be a GGUF file: its own vocabulary is
// kept, and the default type is Q8_0 for a quantized file. Existing outputs are refused before anything is
// loaded, unless opts.Overwrite.
func Export(ctx context.Context, src Source, path string, opts ExportOptions) (*ExportResult, error) {
	fromFile := IsFile(src.ModelDir)
	dir := src.ModelDir
	if !fromFile {
		dir = policyDir(dir)
		if !isFile(filepath.Join(dir, "config.json")) {
			if isFile(filepath.Join(dir, "adapter_config.json")) {
				return nil, fmt.Errorf("gguf: %s holds a LoRA adapter, not a model: give the base model as the model and this folder as the adapter", dir)
			}
			return nil, fmt.Errorf("gguf: %s has no config.json (not a model folder or a GGUF file)", dir)
		}
	}
	for _, p := range []string{path, opts.Modelfile} {
		if p != "" {
			if err := checkOutput(p, opts.Overwrite); err != nil {
				return nil, err
			}
		}
	}
	mopts := opts.Model
	if mopts == nil {
		mopts = &model.Options{Storage: model.StorageAsStored}
	}
	var (
		m         *model.Model
		fileVocab *Vocab // a GGUF base's own
		dtype     = opts.DType
	)
	if fromFile {
		g, err := Open(dir)
		if err != nil {
			return nil, err
		}
		defer g.Close()
		if fileVocab, err = g.Vocab(); err != nil {
			return nil, err
		}
		if dtype == "" {
			dtype = g.exportDType()
		}
		if m, err = g.model(mopts); err != nil {
			return nil, err
		}
	} else {
		// The architecture is checked before the weights are read.
		if c, err := model.ReadConfig(filepath.Join(dir, "config.json")); err != nil {
			return nil, err
		} else if _, err := lookupFamily(c); err != nil {
			return nil, err
		}
		if dtype == "" {
			var err error
			if dtype, err = model.WeightsDType(dir); err != nil {
				return nil, err
			}
		}
	}
	if !validDType(dtype) {
		return nil, fmt.Errorf("%w: dtype %q (want one of %s)", ErrUnsupported, dtype, strings.Join(DTypes, ", "))
	}
	if m == nil {
		var err error
		if m, err = model.Load(dir, mopts); err != nil {
			return nil, err
		}
	}
	cfg := m.Config()
	weight := func(name string) ([]float32, error) {
		data, _, err := m.Weight(name)
		return data, err
	}
	tokDir, genDirs := dir, []string{dir}
	if fromFile {
		genDirs = nil
	}
	if src.AdapterDir != "" {
		adDir := policyDir(src.AdapterDir)
		ad, err := lora.Load(m, adDir)
		if err != nil {
			return nil, fmt.Errorf("gguf: the adapter %s does not fit the model %s: %w", adDir, dir, err)
		}
		weight = func(name string) ([]float32, error) {
			data, _, err := ad.MergedWeight(name)
			return data, err
		}
		if isFile(filepath.Join(adDir, "tokenizer.json")) {
			tokDir = adDir
		}
		genDirs = append([]string{adDir}, genDirs...)
	}
	res := &ExportResult{DType: strings.ToUpper(dtype), TokenizerDir: tokDir, VocabSize: cfg.VocabSize}
	vocab := fileVocab
	if fromFile {
		res.TokenizerDir = dir
	} else if !isFile(filepath.Join(tokDir, "tokenizer.json")) {
		res.Placeholder = true
		eos := -1
		if len(cfg.EOSTokenIDs) > 0 {
			eos = cfg.EOSTokenIDs[0]
		}
		vocab = PlaceholderVocab(cfg.VocabSize, cfg.BOSTokenID, eos, padTokenID(dir))
	} else {
		tok, err := tokenizer.LoadDir(tokDir)
		if err != nil {
			return nil, err
		}
		raw, err := regfile.ReadFile(filepath.Join(tokDir, "tokenizer.json"), regfile.MaxMeta)
		if err != nil {
			return nil, fmt.Errorf("gguf: %w", err)
		}
		if vocab, err = NewVocab(tok, raw, cfg.VocabSize); err != nil {
			return nil, err
		}
	}
	r, err := Write(ctx, path, cfg, weight, Options{DType: dtype, Vocab: vocab, Name: opts.Name,
		Overwrite: opts.Overwrite, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	res.Result = *r
	if opts.Modelfile == "" {
		return res, nil
	}
	var gen *GenerationDefaults
	for _, d := range genDirs {
		if gen, err = ReadGenerationDefaults(d); err != nil {
			return nil, err
		}
		if gen != nil {
			break
		}
	}
	var mo ModelfileOptions
	for _, d := range genDirs {
		plain, err := model.PlainPrompts(d)
		if err != nil {
			return nil, err
		}
		if plain {
			mo.PlainPrompts = true
			break
		}
	}
	rel, err := filepath.Rel(filepath.Dir(opts.Modelfile), path)
	if err != nil {
		rel = filepath.Base(path)
	}
	if err := WriteModelfile(opts.Modelfile, rel, vocab, gen, mo, opts.Overwrite); err != nil {
		return nil, err
	}
	return res, nil
}

func validDType(d string) bool {
	for _, t := range DTypes {
		if strings.EqualFold(t, d) {
			return true
		}
	}
	return false
}

// policyDir resolves a checkpoint-N folder (policy/ inside, no
// config.json) to its policy/ subfolder.
func policyDir(dir string) string {
	if st, err := os.Stat(filepath.Join(dir, "policy")); err == nil && st.IsDir() && !isFile(filepath.Join(dir, "config.json")) {
		return filepath.Join(dir, "policy")
	}
	return dir
}

func isFile(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir()
}

// padTokenID reads config.json's pad_token_id (-1 when absent).
func padTokenID(dir string) int {
	var c struct {
		Pad *int `json:"pad_token_id"`
	}
	b, err := regfile.ReadFile(filepath.Join(dir, "config.json"), regfile.MaxMeta)
	if err != nil || json.Unmarshal(b, &c) != nil || c.Pad == nil {
		return -1
	}
	return *c.Pad
}

// exportDType is the type Export writes a model read from g in when none
// is asked for: the embedding's, or Q8_0 for a quantized file (a float
// type would be several times its size).
func (g *File) exportDType() string {
	if t, ok := g.Tensor("token_embd.weight"); ok {
		switch t.Type {
		case TypeF32, TypeF16, TypeBF16:
			return t.Type.String()
		}
	}
	return "Q8_0"
}
