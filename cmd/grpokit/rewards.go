package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/grpokit/grpokit/envs/gsm8k"
	"github.com/grpokit/grpokit/envs/poker"
	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/internal/strictcfg"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
	"github.com/grpokit/grpokit/reward/rewardmodel"
)

// rewardSpec is one entry of the config's rewards list.
type rewardSpec struct {
	// Type is the built-in (see rewardTypes).
	Type string `json:"type"`
	// Name is the metric name (rewards/<name>/mean); default the type.
	Name string `json:"name"`
	// Weight multiplies the reward in the total; default 1.
	Weight *float64 `json:"weight"`
	// Pattern is the regex of "regex".
	Pattern string `json:"pattern"`
	// Tag, if set, scores the content of the completion's <tag>…</tag>.
	Tag string `json:"tag"`
	// Tags are the tags of "tags" and "tag_count", in order.
	Tags []string `json:"tags"`
	// Tolerance is "numeric"'s absolute tolerance.
	Tolerance float64 `json:"tolerance"`
	// Limit and PerRune are "length_penalty"'s: -PerRune per rune past Limit.
	Limit   int     `json:"limit"`
	PerRune float64 `json:"per_rune"`
	// MaxCompletionLen and SoftPunishCache are "soft_overlong_punishment"'s
	// (TRL's get_soft_overlong_punishment arguments), in tokens.
	MaxCompletionLen int `json:"max_completion_len"`
	SoftPunishCache  int `json:"soft_punish_cache"`
	// NgramSize (default 3) and MaxPenalty (default -1) are
	// "repetition_penalty"'s (TRL's get_repetition_penalty_reward).
	NgramSize  int      `json:"ngram_size"`
	MaxPenalty *float64 `json:"max_penalty"`
	// Path is "reward_model"'s folder: a …ForSequenceClassification
	// checkpoint with its tokenizer (TRL: a model in reward_funcs).
	Path string `json:"path"`
	// Storage is how "reward_model" holds its weights (stored, the
	// default; f32, bf16, nf4, int8), DType its compute dtype (float32,
	// the default, or bfloat16) and BatchSize its rows per forward pass.
	Storage   string `json:"storage"`
	DType     string `json:"dtype"`
	BatchSize int    `json:"batch_size"`

	// chatVars are the run's chat_template_kwargs: TRL renders a reward
	// model's chat template with them too (withChatVars sets them).
	chatVars map[string]any
}

// withChatVars gives each reward spec the run's chat_template_kwargs.
func withChatVars(specs []rewardSpec, vars map[string]any) []rewardSpec {
	out := slices.Clone(specs)
	for i := range out {
		out[i].chatVars = vars
	}
	return out
}

// rewardTypes documents the built-ins.
var rewardTypes = map[string]string{
	"exact":                    "1 when the completion (trimmed) equals the answer",
	"normalized":               "1 when the completions equal after lower-casing and dropping punctuation",
	"numeric":                  "1 when the last number of the completion is the answer's (within tolerance)",
	"contains":                 "1 when the completion contains the answer",
	"regex":                    "1 when the completion matches pattern",
	"tags":                     "1 when the completion is exactly the tags in order (<t>…</t> each)",
	"tag_count":                "partial credit per well-formed tag of tags",
	"json_valid":               "1 when the completion is one valid JSON value",
	"length_penalty":           "-per_rune for each rune beyond limit",
	"max_length":               "1 − runes/limit, at least 0 (shorter is better)",
	"think_format":             "TRL's think_format_reward: 1 when the completion is <think>…</think> then the answer",
	"soft_overlong_punishment": "TRL's (DAPO's): 0 up to max_completion_len − soft_punish_cache tokens, falling to −1 at max_completion_len",
	"repetition_penalty":       "TRL's: max_penalty (default −1) × the share of repeated ngram_size-token n-grams (default 3)",
	"gsm8k":                    "the five rewards of the GSM8K seed (names fixed)",
	"poker":                    "the poker task's class-weighted correctness",
	"wordle":                   "the Wordle move rewards (format, valid, consistent, …)",
	"reward_model":             "a sequence-classification reward model's score; path names its folder",
}

// buildRewards turns the specs into named rewards.
func buildRewards(specs []rewardSpec) ([]reward.Named, error) {
	var out []reward.Named
	for i, s := range specs {
		w := 1.0
		if s.Weight != nil {
			w = *s.Weight
		}
		name := rewardName(s)
		var f reward.Func
		var scorer reward.Scorer // a reward that needs more than the three strings
		switch s.Type {
		case "exact":
			f = reward.ExactMatch()
		case "normalized":
			f = reward.NormalizedMatch()
		case "numeric":
			f = reward.NumericMatch(s.Tolerance)
		case "contains":
			f = func(_, c, a string) float64 {
				if a != "" && strings.Contains(c, a) {
					return 1
				}
				return 0
			}
		case "regex":
			var err error
			if f, err = reward.Regex(s.Pattern); err != nil {
				return nil, fmt.Errorf("grpokit: rewards[%d] (regex): %w", i, err)
			}
		case "tags":
			f = reward.TagStructure(s.Tags...)
		case "tag_count":
			f = reward.TagCount(s.Tags...)
		case "json_valid":
			f = func(_, c, _ string) float64 {
				if json.Valid([]byte(strings.TrimSpace(c))) {
					return 1
				}
				return 0
			}
		case "length_penalty":
			f = reward.LengthPenalty(s.Limit, s.PerRune)
		case "max_length":
			if s.Limit < 1 {
				return nil, fmt.Errorf("grpokit: rewards[%d] (max_length): limit %d, want ≥ 1", i, s.Limit)
			}
			f = func(_, c, _ string) float64 { return max(0, 1-float64(utf8.RuneCountInString(c))/float64(s.Limit)) }
		case "think_format":
			f = reward.ThinkFormat()
		case "soft_overlong_punishment":
			var err error
			if scorer, err = reward.SoftOverlongPunishment(s.MaxCompletionLen, s.SoftPunishCache); err != nil {
				return nil, fmt.Errorf("grpokit: rewards[%d]: %w", i, err)
			}
		case "repetition_penalty":
			maxPenalty := -1.0
			if s.MaxPenalty != nil {
				maxPenalty = *s.MaxPenalty
			}
			var err error
			if scorer, err = reward.RepetitionPenalty(cmp.Or(s.NgramSize, 3), maxPenalty); err != nil {
				return nil, fmt.Errorf("grpokit: rewards[%d]: %w", i, err)
			}
		case "reward_model":
			var err error
			if scorer, err = loadRewardModel(s); err != nil {
				return nil, fmt.Errorf("grpokit: rewards[%d] (reward_model): %w", i, err)
			}
		case "gsm8k", "poker", "wordle":
			set := map[string]func() []reward.Named{"gsm8k": gsm8k.Rewards, "poker": poker.Rewards,
				"wordle": func() []reward.Named { return wordle.Rewards(wordle.DefaultWeights()) }}[s.Type]()
			for _, r := range set {
				r.Weight *= w
				out = append(out, r)
			}
			continue
		default:
			return nil, fmt.Errorf("grpokit: rewards[%d]: unknown type %q (want one of %s)", i, s.Type, strings.Join(sortedKeys(rewardTypes), ", "))
		}
		if scorer != nil {
			if s.Tag != "" {
				return nil, fmt.Errorf("grpokit: rewards[%d] (%s): tag does not apply (it counts the whole completion's tokens)", i, s.Type)
			}
			out = append(out, reward.Named{Name: name, Weight: w, Scorer: scorer})
			continue
		}
		if s.Tag != "" {
			f = reward.OnTag(s.Tag, f)
		}
		out = append(out, reward.Named{Name: name, Weight: w, Scorer: f})
	}
	return out, nil
}

// loadRewardModel loads "reward_model"'s folder (on the backend the
// process uses for its models: GOMLX_BACKEND, set from the config first).
func loadRewardModel(s rewardSpec) (*rewardmodel.Model, error) {
	if s.Path == "" {
		return nil, errors.New("path is empty: name the reward model's folder")
	}
	storage, err := model.ParseStorage(cmp.Or(s.Storage, "stored"))
	if err != nil {
		return nil, err
	}
	compute, err := model.ParseCompute(s.DType)
	if err != nil {
		return nil, err
	}
	return rewardmodel.Load(strictcfg.ExpandHome(s.Path), &rewardmodel.Options{Storage: storage, Compute: compute, BatchSize: s.BatchSize,
		ChatTemplateKwargs: s.chatVars})
}

// rewardName is a reward's metric name: its name, else its type (a reward
// model's folder name, as TRL names a model reward).
func rewardName(s rewardSpec) string {
	switch {
	case s.Name != "":
		return s.Name
	case s.Type == "reward_model" && s.Path != "":
		return filepath.Base(filepath.Clean(strictcfg.ExpandHome(s.Path)))
	}
	return s.Type
}

// rewardModelMemory is the memory plan's items of the reward models among
// specs, read from their config.json and weights' dtype without loading
// them: the weights as they would be held and one forward pass over rows
// samples of up to tokens tokens (the items the trainer's plan lists).
func rewardModelMemory(specs []rewardSpec, rows, tokens int) ([]memplan.Item, error) {
	var out []memplan.Item
	for i, s := range specs {
		if s.Type != "reward_model" {
			continue
		}
		dir := strictcfg.ExpandHome(s.Path)
		cfg, err := model.ReadConfig(filepath.Join(dir, "config.json"))
		if err != nil {
			return nil, fmt.Errorf("grpokit: rewards[%d] (reward_model): %w", i, err)
		}
		file, err := model.WeightsDType(dir)
		if err != nil {
			return nil, fmt.Errorf("grpokit: rewards[%d] (reward_model): %w", i, err)
		}
		storage, err := model.ParseStorage(cmp.Or(s.Storage, "stored"))
		if err != nil {
			return nil, fmt.Errorf("grpokit: rewards[%d] (reward_model): %w", i, err)
		}
		name := rewardName(s)
		out = append(out,
			memplan.Item{Name: fmt.Sprintf("reward %s: weights", name), Bytes: rewardmodel.HeldBytes(cfg, storage, file, false), Note: "as held"},
			memplan.Item{Name: fmt.Sprintf("reward %s: forward", name), Bytes: rewardmodel.ForwardBytes(cfg, s.BatchSize, rows, tokens),
				Note: fmt.Sprintf("%d samples of ≤ %d tokens", rows, tokens)})
	}
	return out, nil
}
