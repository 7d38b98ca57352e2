package grpo

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
)

// generationKwargs are the transformers GenerationConfig names that
// Config.GenerationKwargs may hold, each with the field it sets and
// whether it must be a whole number.
var generationKwargs = map[string]struct {
	set   func(c *Config, v float64)
	whole bool
}{
	"temperature":        {func(c *Config, v float64) { c.Temperature = v }, false},
	"top_p":              {func(c *Config, v float64) { c.TopP = v }, false},
	"top_k":              {func(c *Config, v float64) { c.TopK = int(v) }, true},
	"min_p":              {func(c *Config, v float64) { c.MinP = v }, false},
	"repetition_penalty": {func(c *Config, v float64) { c.RepetitionPenalty = v }, false},
	"max_new_tokens":     {func(c *Config, v float64) { c.MaxCompletionLength = int(v) }, true},
	"min_new_tokens":     {func(c *Config, v float64) { c.MinCompletionLength = int(v) }, true},
}

// settled is c as the trainer runs it: GenerationKwargs applied, then
// validated (DecodeConfig, LoadConfig and NewTrainer).
func (c Config) settled() (Config, error) {
	c, err := c.ApplyGenerationKwargs()
	if err != nil {
		return c, err
	}
	return c, c.Validate()
}

// ApplyGenerationKwargs returns c with the values of GenerationKwargs
// (TRL's generation_kwargs) set in the fields they name, which they
// override as in TRL: temperature, top_p, top_k, min_p,
// repetition_penalty, max_new_tokens (MaxCompletionLength) and
// min_new_tokens (MinCompletionLength). NewTrainer, DecodeConfig and
// LoadConfig apply them. A name grpokit's sampler has no setting for, or a
// value that is not a number, is an error.
func (c Config) ApplyGenerationKwargs() (Config, error) {
	var errs []string
	for _, k := range slices.Sorted(maps.Keys(c.GenerationKwargs)) {
		g, ok := generationKwargs[k]
		if !ok {
			errs = append(errs, fmt.Sprintf("%q has no grpokit setting (want one of %s)", k, strings.Join(slices.Sorted(maps.Keys(generationKwargs)), ", ")))
			continue
		}
		var v float64
		switch x := c.GenerationKwargs[k].(type) {
		case float64:
			v = x
		case int:
			v = float64(x)
		case json.Number:
			f, err := x.Float64()
			if err != nil {
				errs = append(errs, fmt.Sprintf("%q: %v is not a number", k, x))
				continue
			}
			v = f
		default:
			errs = append(errs, fmt.Sprintf("%q: %v is not a number", k, x))
			continue
		}
		if math.IsNaN(v) || math.IsInf(v, 0) || (g.whole && v != math.Trunc(v)) {
			errs = append(errs, fmt.Sprintf("%q: %v is not a %s", k, v, map[bool]string{true: "whole number", false: "finite number"}[g.whole]))
			continue
		}
		g.set(&c, v)
	}
	if len(errs) > 0 {
		return c, fmt.Errorf("grpo: config: generation_kwargs: %s", strings.Join(errs, "; "))
	}
	return c, nil
}
