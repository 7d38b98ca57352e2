package main

import (
	"encoding/json"
	"fmt"
	"os"
)

// with returns v with the step's shape changed where a value is > 0:
// prompts, completions per prompt, prompt tokens, sampled tokens and rows
// per micro-batch. Changing prompts or g without microBatch makes one
// micro-batch of every row.
func (v variant) with(prompts, g, promptLen, newTokens, microBatch int) (variant, error) {
	if prompts < 0 || g < 0 || promptLen < 0 || newTokens < 0 || microBatch < 0 {
		return v, fmt.Errorf("negative -prompts %d, -g %d, -prompt-len %d, -new-tokens %d or -micro-batch %d", prompts, g, promptLen, newTokens, microBatch)
	}
	if prompts > 0 || g > 0 {
		v.prompts, v.g = max(prompts, 0), max(g, 0)
		if prompts == 0 {
			v.prompts = variants["full"].prompts
		}
		if g == 0 {
			v.g = variants["full"].g
		}
		v.batchSize, v.accum = v.prompts*v.g, 1
	}
	if promptLen > 0 {
		v.promptLen = promptLen
	}
	if newTokens > 0 {
		v.newTokens = newTokens
	}
	if microBatch > 0 {
		rows := v.prompts * v.g
		if rows%microBatch != 0 {
			return v, fmt.Errorf("-micro-batch %d does not divide the %d rows (prompts × g)", microBatch, rows)
		}
		v.batchSize, v.accum = microBatch, rows/microBatch
	}
	return v, nil
}

// bandwidthSpec says how the decode bound's memory bandwidth is found: gbs
// GB/s when > 0 (a GPU's), else measured here (small: a short test).
type bandwidthSpec struct {
	gbs   float64
	small bool
}

// results are the figures -json writes (seconds; 0 where not measured).
type results struct {
	Variant            string  `json:"variant"`
	Model              string  `json:"model"`
	Params             int     `json:"params"`
	DType              string  `json:"dtype"`
	LoRA               bool    `json:"lora"`
	Prompts            int     `json:"prompts"`
	G                  int     `json:"g"`
	PromptLen          int     `json:"prompt_len"`
	NewTokens          int     `json:"new_tokens"`
	FirstSeconds       float64 `json:"first_step_s"`
	StepSeconds        float64 `json:"step_s"`
	GenerateSeconds    float64 `json:"generate_s"`
	TrainSeconds       float64 `json:"train_s"`
	TorchStepSeconds   float64 `json:"torch_step_s,omitempty"` // the anchor's
	TorchAnchor        string  `json:"torch_anchor,omitempty"` // the fastest PyTorch run's label
	TRLStepSeconds     float64 `json:"trl_step_s,omitempty"`   // TRL's GRPOTrainer on the same step
	TRLLabel           string  `json:"trl,omitempty"`          // "TRL 1.16.0"
	DecodeSeconds      float64 `json:"decode_step_s,omitempty"`
	DecodeBoundSeconds float64 `json:"decode_bound_s,omitempty"`
}

// write writes r as indented JSON to path.
func (r results) write(path string) error {
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
