package main

import (
	"cmp"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/gguf"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/tokenizer"
)

// planCmd is "grpokit plan": the memory plan train would print before
// step 0, from the config, config.json, the safetensors header, the
// tokenizer and the data; no weight is read, so whether an 8B run fits is
// known in seconds. It fails, as train would, when the plan exceeds the
// memory available.
func planCmd(_ context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	configPath := fs.String("config", "", "the run config train would use")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	c, err := loadRunConfig(*configPath)
	if err != nil {
		return err
	}
	if err := c.validate(); err != nil {
		return err
	}
	req, err := memoryRequest(&c)
	if err != nil {
		return err
	}
	plan, err := memplan.Estimate(req)
	if err != nil {
		return err
	}
	budget, err := memplan.BudgetFromEnv()
	if err != nil {
		return err
	}
	plan.Format(out, budget.Bytes, budget.Source)
	if budget.Off {
		return nil
	}
	return plan.Check(budget.Bytes, budget.Source)
}

// memoryRequest is what the trainer would plan for c, read without
// loading the weights: the held bytes come from config.json and the
// weights' dtype, the prompt length from the first 64 training prompts
// (as the trainer measures it).
func memoryRequest(c *runConfig) (memplan.Request, error) {
	train, _, _, err := loadData(c)
	if err != nil {
		return memplan.Request{}, err
	}
	var (
		cfg       model.Config
		fileDType string
		tok       *tokenizer.Pretrained
	)
	if t := c.Model.Tiny; t != nil {
		// The tiny model train would build: its tokenizer is written to a
		// temporary folder, its weights are not made.
		tmp, err := os.MkdirTemp("", "grpokit-plan-")
		if err != nil {
			return memplan.Request{}, err
		}
		defer os.RemoveAll(tmp)
		if err := tokenizer.WriteTinyDir(tmp, tinyWords(c, train)); err != nil {
			return memplan.Request{}, err
		}
		if tok, err = tokenizer.LoadDir(tmp); err != nil {
			return memplan.Request{}, err
		}
		cfg, fileDType = t.config().Config(tok.Tokenizer.VocabSize(), tok.EOS[:1]), "F32"
	} else {
		dir := c.Model.Path
		if gguf.IsFile(dir) {
			// Weights are dequantized to float32 as they load.
			g, err := gguf.Open(dir)
			if err != nil {
				return memplan.Request{}, err
			}
			defer g.Close()
			if cfg, err = g.ModelConfig(); err != nil {
				return memplan.Request{}, err
			}
			if tok, err = g.Pretrained(); err != nil {
				return memplan.Request{}, err
			}
			fileDType = "F32"
		} else {
			if cfg, err = model.ReadConfig(filepath.Join(dir, "config.json")); err != nil {
				return memplan.Request{}, err
			}
			if err := model.CheckWeightsHeader(dir, cfg, nil); err != nil {
				return memplan.Request{}, err
			}
			if fileDType, err = model.WeightsDType(dir); err != nil {
				return memplan.Request{}, err
			}
			if tok, err = tokenizer.LoadDir(dir); err != nil {
				return memplan.Request{}, err
			}
		}
	}
	opts, err := c.Model.options(cmp.Or(cfg.TorchDType, "float32"))
	if err != nil {
		return memplan.Request{}, err
	}
	popts := grpo.LMPolicyOptions{ChatOptions: tokenizer.ChatOptions{Vars: c.ChatTemplateKwargs}, TemplatePlainPrompts: c.TemplatePlainPrompts}
	encode := func(ex dataset.Example, maxLen int) ([]int, error) { return grpo.EncodePrompt(tok, ex, popts, maxLen) }
	if len(c.Tools) > 0 {
		// Trajectories start from the prompt rendered with the tools'
		// schemas, as train's SetTools renders it.
		var tools []*agent.Tool
		for _, name := range c.Tools {
			t, err := agent.Builtin(name)
			if err != nil {
				return memplan.Request{}, fmt.Errorf("grpokit: config: tools: %w", err)
			}
			tools = append(tools, t)
		}
		format, err := toolFormat(c.ToolCallFormat)
		if err != nil {
			return memplan.Request{}, fmt.Errorf("grpokit: config: tool_call_format: %w", err)
		}
		if format == nil && c.Model.Tiny != nil {
			format = agent.Plain{}
		}
		r, err := agent.NewRenderer(tok, agent.RendererOptions{Format: format, Vars: c.ChatTemplateKwargs})
		if err != nil {
			return memplan.Request{}, fmt.Errorf("grpokit plan: %w", err)
		}
		encode = func(ex dataset.Example, maxLen int) ([]int, error) { return grpo.ToolPromptIDs(r, tools, ex, maxLen) }
	}
	longest, err := grpo.LongestPrompt(train, encode, c.MaxPromptLength)
	if err != nil {
		return memplan.Request{}, fmt.Errorf("grpokit plan: training %w", err)
	}
	req := memplan.Request{Model: cfg, Train: c.Config.MemorySettings(), Storage: model.StorageF32, FileDType: fileDType, PromptTokens: longest,
		WidensWeights: opts.Compute == dtypes.BFloat16 || !goBackend(c.Backend)}
	req.Train.Trajectories = len(c.Tools) > 0
	if c.Model.UsePEFT {
		req.LoRARank, req.Storage, req.DoubleQuant = c.Model.LoraR, opts.Storage, opts.DoubleQuant
		req.LoRATargets = c.Model.LoraTargetModules
		if opts.Storage == model.StorageGGUF {
			// The file's blocks, tensor by tensor.
			g, err := gguf.Open(c.Model.Path)
			if err != nil {
				return memplan.Request{}, err
			}
			req.WeightBytes, err = g.HeldBytes(cfg, opts.Storage, false)
			g.Close()
			if err != nil {
				return memplan.Request{}, err
			}
		}
	}
	tokens := cmp.Or(longest, c.MaxPromptLength, 512) + c.MaxCompletionLength // as the trainer plans
	if req.Extra, err = rewardModelMemory(c.Rewards, c.Config.EffectiveGenerationBatchSize(), tokens); err != nil {
		return memplan.Request{}, err
	}
	return req, nil
}

// goBackend reports whether the backend that runs the graphs (the
// config's, else $GOMLX_BACKEND, else the pure-Go one) is the pure-Go one.
func goBackend(config string) bool {
	return strings.HasPrefix(backend.Resolve(config), "go") // "" reads $GOMLX_BACKEND
}
