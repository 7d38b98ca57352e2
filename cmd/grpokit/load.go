package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/grpokit/grpokit/gguf"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/tokenizer"
)

// loaded is a model ready to run: weights, tokenizer, adapter and the
// constraint it was trained under.
type loaded struct {
	model      *model.Model
	tok        *tokenizer.Pretrained
	adapter    *lora.Adapter
	constraint model.Constraint
	// chatVars are the chat template's extra variables (TRL's
	// chat_template_kwargs).
	chatVars map[string]any
	// templatePlain renders plain prompts through the chat template
	// (template_plain_prompts).
	templatePlain bool
}

// folder resolves a checkpoint-N folder to its policy/ subfolder.
func folder(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, "policy")); err == nil {
		if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
			return filepath.Join(dir, "policy")
		}
	}
	return dir
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// inference is how generate, chat and eval hold a model: as stored (a
// bf16 checkpoint stays bf16: half the memory of float32, and the same
// outputs, since the products widen the weights exactly), or quantized
// with quantize "nf4" or "int8"; under a frozen policy (see
// loaded.policy).
func inference(quantize string) (*model.Options, error) {
	opts := &model.Options{Storage: model.StorageAsStored}
	switch quantize {
	case "":
	case "nf4", "int8":
		opts.Storage = model.Storage(quantize)
	default:
		return nil, usageError{fmt.Errorf("-quantize %q: want nf4 or int8", quantize)}
	}
	return opts, nil
}

// quantizeFlag is the -quantize flag of the commands that only run a model.
const quantizeFlag = "hold the weights as nf4 or int8 (bitsandbytes' load_in_4bit / load_in_8bit); empty keeps them as stored"

// loadModel reads the model folder dir (a Hugging Face folder, a saved
// final/ or a checkpoint-N, or a GGUF file) with opts (nil: float32) and, when adapterDir
// is set, the PEFT adapter there. The tokenizer comes from the adapter's
// folder when it has one, else from dir; so does constraint.json. A
// constraint that was not saved is reported on warn.
func loadModel(dir, adapterDir string, opts *model.Options, warn io.Writer) (*loaded, error) {
	if dir == "" {
		return nil, usageError{errors.New("grpokit: -model is required")}
	}
	var (
		m    *model.Model
		tok  *tokenizer.Pretrained // the GGUF file's
		dirs []string              // where constraint.json may be
		err  error
	)
	if gguf.IsFile(dir) {
		if m, tok, err = gguf.LoadPretrained(dir, opts); err != nil {
			return nil, err
		}
	} else {
		dir = folder(dir)
		if !exists(filepath.Join(dir, "config.json")) {
			if exists(filepath.Join(dir, "adapter_config.json")) {
				return nil, fmt.Errorf("grpokit: %s holds a LoRA adapter: give the base model as -model and this folder as -adapter", dir)
			}
			return nil, fmt.Errorf("grpokit: %s has no config.json (not a model folder or a GGUF file)", dir)
		}
		if m, err = model.Load(dir, opts); err != nil {
			return nil, err
		}
		dirs = []string{dir}
	}
	l := &loaded{model: m, tok: tok}
	tokDir := dir
	if adapterDir != "" {
		adapterDir = folder(adapterDir)
		if l.adapter, err = lora.Load(m, adapterDir); err != nil {
			return nil, err
		}
		if exists(filepath.Join(adapterDir, "tokenizer.json")) {
			tokDir, l.tok = adapterDir, nil
		}
		dirs = append([]string{adapterDir}, dirs...)
	}
	if l.tok == nil {
		if l.tok, err = tokenizer.LoadDir(tokDir); err != nil {
			return nil, err
		}
	}
	for _, d := range dirs {
		c, err := model.LoadConstraint(d)
		if errors.Is(err, model.ErrConstraintNotSaved) {
			fmt.Fprintf(warn, "grpokit: warning: %v; running unconstrained\n", err)
			break
		}
		if err != nil {
			return nil, err
		}
		if c != nil {
			l.constraint = c
			break
		}
	}
	return l, nil
}

// policy returns the LMPolicy of l: a frozen one (generate, chat, eval),
// which keeps the weights as held, or one to train.
func (l *loaded) policy(frozen bool) (*grpo.LMPolicy, error) {
	return grpo.NewLMPolicy(l.model, l.adapter, l.tok, &grpo.LMPolicyOptions{
		Constraint: l.constraint, ChatOptions: tokenizer.ChatOptions{Vars: l.chatVars},
		TemplatePlainPrompts: l.templatePlain, Frozen: frozen})
}

// choicesTrie is the constraint admitting exactly one of choices, then EOS.
func choicesTrie(tok *tokenizer.Pretrained, choices []string) (model.Constraint, error) {
	if len(tok.EOS) == 0 {
		return nil, errors.New("grpokit: constraint: the tokenizer has no EOS token")
	}
	var seqs [][]int
	for _, c := range choices {
		ids := tok.Tokenizer.Encode(c, false)
		if len(ids) == 0 {
			return nil, fmt.Errorf("grpokit: constraint: choice %q encodes to no tokens", c)
		}
		seqs = append(seqs, ids)
	}
	return model.NewTrie(seqs, tok.EOS[0]), nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// baseConfig reads the configuration of a base model: dir/config.json,
// or a GGUF file's metadata.
func baseConfig(path string) (model.Config, error) {
	if gguf.IsFile(path) {
		g, err := gguf.Open(path)
		if err != nil {
			return model.Config{}, err
		}
		defer g.Close()
		return g.ModelConfig()
	}
	return model.ReadConfig(filepath.Join(path, "config.json"))
}

// loadBase reads a base model and its tokenizer from a Hugging Face
// folder or a GGUF file.
func loadBase(path string, opts *model.Options) (*model.Model, *tokenizer.Pretrained, error) {
	if gguf.IsFile(path) {
		return gguf.LoadPretrained(path, opts)
	}
	m, err := model.Load(path, opts)
	if err != nil {
		return nil, nil, err
	}
	tok, err := tokenizer.LoadDir(path)
	if err != nil {
		return nil, nil, err
	}
	return m, tok, nil
}
