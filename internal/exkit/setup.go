package exkit

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/gguf"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/lora"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/tokenizer"
)

// Tiny describes the embedded model an example builds when no -model is
// given (model.NewTiny): a Llama-shaped decoder with random weights and a
// byte-level BPE tokenizer in which each of Words is one token.
type Tiny struct {
	Words        []string // words (pre-token pieces) that get a token each
	Hidden       int      // hidden_size
	Layers       int      // num_hidden_layers
	Heads        int      // num_attention_heads (= key/value heads)
	Intermediate int      // intermediate_size
	MaxPositions int      // max_position_embeddings
}

// Setup is the model a run trains: loaded from a folder or built tiny.
type Setup struct {
	Model   *model.Model
	Tok     *tokenizer.Pretrained
	Adapter *lora.Adapter // nil for full fine-tuning
	Dir     string        // the model folder (the tiny model's is Out/initial-model)
	Tiny    bool          // built from scratch
	// From is the checkpoint the run continues from (Config.Checkpoint,
	// found and verified once by Load); "" for a fresh run.
	From string
	// Memory is the budget the memory plan is checked against:
	// -memory-limit, else $GRPOKIT_MEMORY_LIMIT, else what is available.
	Memory memplan.Budget
	// Lock is the output folder's lock, taken by Load before anything is
	// read or written there; Close releases it.
	Lock *checkpoint.OutputLock
}

// Limit gives tr the run's memory budget (Setup.Memory), Go's memory
// limit for the run (Trainer.GCLimit) and the output folder's lock
// (Trainer.OutputLock), as the grpokit command does.
func (s *Setup) Limit(tr *grpo.Trainer) {
	budget := s.Memory
	tr.Memory, tr.GCLimit = &budget, true
	tr.OutputLock = s.Lock
}

// Close releases the output folder's lock; the example calls it when it
// is done with the folder.
func (s *Setup) Close() { s.Lock.Release() }

// InitialModelDir is the folder under Out where a run writes the tiny
// model it builds, before any training: its untrained weights, named so
// that nobody takes them for the trained ones (those are in the
// checkpoints and final/).
const InitialModelDir = "initial-model"

// Load prepares the model of c: the folder c.Model, or the tiny model
// described by tiny (model.NewTiny), written to c.Out/initial-model. With
// c.Train "lora" it attaches a LoRA adapter. name prefixes errors. Load
// first takes c.Out's lock (checkpoint.Lock), held until Setup.Close and
// handed to the trainer by Setup.Limit; a run is refused there, before
// anything is written, when another program holds c.Out, or when c.Out
// holds another run and this one resumes none: otherwise its
// initial-model and warm start would be replaced under the first run. A run resumed from a
// checkpoint keeps its initial-model (model.ResumeTiny): settings that
// build another tiny model are an error.
func Load(name string, c *Config, tiny Tiny) (_ *Setup, err error) {
	// The folder is locked before anything is read or written in it: a
	// second example started on it stops here, whenever it starts.
	lock, err := checkpoint.Lock(c.Out)
	if err != nil {
		return nil, inUse(name, err)
	}
	defer func() {
		if err != nil {
			lock.Release()
		}
	}()
	from, err := c.Checkpoint()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	// A resumed run's checkpoints are its own.
	if err := lock.CheckOutputDir(c.Overwrite || from != ""); err != nil {
		return nil, inUse(name, err)
	}
	if c.Backend != "" {
		// The backend is chosen by GOMLX_BACKEND inside grpokit.
		if err := os.Setenv("GOMLX_BACKEND", c.Backend); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	budget, err := memplan.BudgetFromEnv()
	if c.MemoryLimit != "" {
		budget, err = memplan.ParseLimit(c.MemoryLimit, "-memory-limit")
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	compute, err := model.ParseCompute(c.DType)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	opts := &model.Options{Compute: compute}
	if c.Train == "lora" {
		// A frozen base stays as stored (bf16) or quantized (QLoRA).
		opts.Storage = model.StorageAsStored
		if c.Quantize != "" {
			opts.Storage = model.Storage(c.Quantize)
		}
	}
	s := &Setup{Dir: c.Model, From: from, Memory: budget, Lock: lock}
	if c.Model == "" {
		s.Dir, s.Tiny = filepath.Join(c.Out, InitialModelDir), true
		build := model.NewTiny
		if from != "" {
			// The run's own untrained model stays: the settings must build
			// the same one (tokenizer, shape, seed).
			build = model.ResumeTiny
		}
		m, tok, err := build(s.Dir, tiny.Words, model.TinyConfig{
			Hidden: tiny.Hidden, Layers: tiny.Layers, Heads: tiny.Heads,
			Intermediate: tiny.Intermediate, MaxPositions: tiny.MaxPositions,
		}, uint64(c.Seed), opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		s.Model, s.Tok = m, tok
	} else if gguf.IsFile(c.Model) {
		m, tok, err := gguf.LoadPretrained(c.Model, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(tok.EOS) == 0 {
			return nil, fmt.Errorf("%s: the tokenizer of %s has no EOS token (tokenizer.ggml.eos_token_id)", name, c.Model)
		}
		s.Model, s.Tok = m, tok
	} else {
		if _, err := os.Stat(filepath.Join(c.Model, "tokenizer.json")); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: model folder %s has no tokenizer.json (download the whole repository, e.g. hf download HuggingFaceTB/SmolLM2-135M-Instruct --local-dir %s)", name, c.Model, c.Model)
		}
		tok, err := tokenizer.LoadDir(s.Dir)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(tok.EOS) == 0 {
			return nil, fmt.Errorf("%s: tokenizer in %s has no EOS token (tokenizer_config.json eos_token)", name, s.Dir)
		}
		m, err := model.Load(s.Dir, opts)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		s.Model, s.Tok = m, tok
	}
	if c.Train == "lora" {
		a, err := lora.Attach(s.Model, lora.Config{R: c.LoRARank, Alpha: float64(2 * c.LoRARank), Seed: uint64(c.Seed), Quantize: c.Quantize})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		s.Adapter = a
	}
	return s, nil
}

// Policy returns the GRPO policy over the setup; constraint may be nil.
func (s *Setup) Policy(c *Config, constraint model.Constraint) (*grpo.LMPolicy, error) {
	return grpo.NewLMPolicy(s.Model, s.Adapter, s.Tok, &grpo.LMPolicyOptions{
		Constraint:  constraint,
		ChatOptions: tokenizer.ChatOptions{Vars: map[string]any{"enable_thinking": c.Thinking}},
	})
}

// Encode returns the ids of text without special tokens.
func (s *Setup) Encode(text string) []int { return s.Tok.Tokenizer.Encode(text, false) }
