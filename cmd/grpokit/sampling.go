package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/model"
)

// sampling holds the flags generate and chat share.
type sampling struct {
	model, adapter string
	maxNew         int
	temperature    float64
	topP           float64
	topK           int
	seed           uint64
	raw            bool
	chatVars       map[string]any
	quantize       string
}

func (s *sampling) register(fs *flag.FlagSet) {
	fs.StringVar(&s.model, "model", "", "model folder (Hugging Face layout, a final/ or a checkpoint-N folder) or a GGUF file")
	fs.StringVar(&s.adapter, "adapter", "", "LoRA adapter folder (PEFT layout, or a checkpoint-N folder) applied to -model")
	fs.IntVar(&s.maxNew, "max-new-tokens", 128, "most tokens generated")
	fs.Float64Var(&s.temperature, "temperature", 0, "sampling temperature; 0 decodes greedily")
	fs.Float64Var(&s.topP, "top-p", 1, "nucleus sampling threshold (1: off)")
	fs.IntVar(&s.topK, "top-k", 0, "sample among the K most likely tokens (0: off)")
	fs.Uint64Var(&s.seed, "seed", 1, "sampling seed")
	fs.BoolVar(&s.raw, "raw", false, "send the prompt as plain text, without the chat template")
	fs.StringVar(&s.quantize, "quantize", "", quantizeFlag)
	fs.Func("chat-template-kwargs", `extra chat template variables as JSON (TRL's chat_template_kwargs), e.g. '{"enable_thinking": false}'`, func(v string) error {
		s.chatVars = nil
		if err := json.Unmarshal([]byte(v), &s.chatVars); err != nil {
			return fmt.Errorf("want a JSON object: %v", err)
		}
		return nil
	})
}

// load reads the model (and adapter) of the flags, held as stored or
// quantized.
func (s *sampling) load() (*loaded, error) {
	opts, err := inference(s.quantize)
	if err != nil {
		return nil, err
	}
	l, err := loadModel(s.model, s.adapter, opts, os.Stderr)
	if err != nil {
		return nil, err
	}
	l.chatVars = s.chatVars
	return l, nil
}

func (s *sampling) options() grpo.GenerateOptions {
	return grpo.GenerateOptions{MaxCompletionLength: s.maxNew, Sampling: model.Sampling{Temperature: s.temperature, TopP: s.topP, TopK: s.topK}, Seed: s.seed}
}

// example is the prompt as the model is run: through the chat template
// (history, then the user's text) when the tokenizer has one and -raw is
// not set, else plain text.
func (s *sampling) example(l *loaded, history []dataset.Message, text string) dataset.Example {
	if s.raw || len(l.tok.Templates) == 0 {
		return dataset.Example{Prompt: text}
	}
	msgs := append(append([]dataset.Message(nil), history...), dataset.Message{Role: "user", Content: text})
	return dataset.Example{Messages: msgs, Prompt: text}
}
