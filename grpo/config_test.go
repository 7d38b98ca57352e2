package grpo

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/loss"
)

func TestDefaultConfigValid(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	c := DefaultConfig()
	// TRL 1.10 defaults (loss_type and max_completion_length changed
	// since v0.21.0).
	if c.NumGenerations != 8 || c.Beta != 0 || c.Epsilon != 0.2 || c.LossType != loss.DAPO ||
		c.ScaleRewards != loss.ScaleGroup || c.LearningRate != 1e-6 || c.MaxCompletionLength != 512 ||
		c.MaxPromptLength != 512 || c.Temperature != 1 || c.NumIterations != 1 || c.MaxGradNorm != 1 ||
		c.ImportanceSamplingLevel != loss.LevelToken || c.Delta != nil || c.TopEntropyQuantile != 1 ||
		c.OffPolicyMaskThreshold != nil || !c.UseBiasCorrectionKL || c.EntropyCoef != 0 ||
		c.SAPOTemperaturePos != 1 || c.SAPOTemperatureNeg != 1.05 ||
		c.VESPOKPos != 2 || c.VESPOLambdaPos != 3 || c.VESPOKNeg != 3 || c.VESPOLambdaNeg != 2 ||
		c.MultiObjectiveAggregation != loss.SumThenNormalize || c.RewardWeights != nil ||
		c.MinP != 0 || c.RepetitionPenalty != 1 {
		t.Errorf("DefaultConfig() = %+v differs from TRL 1.10", c)
	}
	if got := c.EffectiveEpsilonHigh(); got != 0.2 {
		t.Errorf("EffectiveEpsilonHigh = %g, want 0.2", got)
	}
}

func TestValidateMessages(t *testing.T) {
	tests := []struct {
		name   string
		modify func(c *Config)
		want   []string // each must appear; FieldError fields in order
	}{
		{"batch not multiple of G", func(c *Config) { c.NumGenerations = 3 },
			[]string{"grpo: config: BatchSize = 8: BatchSize × GradientAccumulationSteps = 8 must be a multiple of NumGenerations (3)"}},
		{"G too small", func(c *Config) { c.NumGenerations = 1 },
			[]string{"grpo: config: NumGenerations = 1: must be at least 2"}},
		{"accumulation fixes multiple", func(c *Config) { c.NumGenerations = 16; c.GradientAccumulationSteps = 2 }, nil},
		{"temperature", func(c *Config) { c.Temperature = 0 },
			[]string{"grpo: config: Temperature = 0: must be a finite number > 0"}},
		{"top p", func(c *Config) { c.TopP = 1.5 }, []string{"grpo: config: TopP = 1.5: must be in (0, 1]"}},
		{"loss type", func(c *Config) { c.LossType = "ppo" },
			[]string{`grpo: config: LossType = "ppo": must be "grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo" or "vespo"`}},
		{"importance sampling level", func(c *Config) { c.ImportanceSamplingLevel = "row" },
			[]string{`grpo: config: ImportanceSamplingLevel = "row": must be "token" or "sequence"`}},
		{"top entropy quantile", func(c *Config) { c.TopEntropyQuantile = 1.2 },
			[]string{"grpo: config: TopEntropyQuantile = 1.2: must be in [0, 1]"}},
		{"delta", func(c *Config) { d := -1.0; c.Delta = &d },
			[]string{"grpo: config: Delta = -1: must be a finite number > 0"}},
		{"dynamic sampling rounds", func(c *Config) { c.DynamicSampling = true; c.DynamicSamplingMaxRounds = 0 },
			[]string{"grpo: config: DynamicSamplingMaxRounds = 0: must be at least 1 with DynamicSampling"}},
		{"min p", func(c *Config) { c.MinP = -0.1 }, []string{"grpo: config: MinP = -0.1: must be in [0, 1]"}},
		{"repetition penalty", func(c *Config) { c.RepetitionPenalty = 0 },
			[]string{"grpo: config: RepetitionPenalty = 0: must be a finite number > 0"}},
		{"aggregation", func(c *Config) { c.MultiObjectiveAggregation = "sum" },
			[]string{`grpo: config: MultiObjectiveAggregation = "sum": must be "sum_then_normalize" or "normalize_then_sum"`}},
		{"scale rewards", func(c *Config) { c.ScaleRewards = "" },
			[]string{`grpo: config: ScaleRewards = "": must be "group", "batch" or "none"`}},
		{"epsilon", func(c *Config) { c.Epsilon = 0 }, []string{"grpo: config: Epsilon = 0: must be in (0, 1)"}},
		{"epsilon high NaN", func(c *Config) { c.EpsilonHigh = math.NaN() },
			[]string{"grpo: config: EpsilonHigh = NaN: must be a finite number ≥ 0"}},
		{"beta negative", func(c *Config) { c.Beta = -1 }, []string{"grpo: config: Beta = -1: must be a finite number ≥ 0"}},
		{"iterations", func(c *Config) { c.NumIterations = 0 }, []string{"grpo: config: NumIterations = 0: must be at least 1"}},
		{"completion length", func(c *Config) { c.MaxCompletionLength = 0 },
			[]string{"grpo: config: MaxCompletionLength = 0: must be at least 1"}},
		{"schedule", func(c *Config) { c.LRSchedulerType = "step" },
			[]string{`grpo: config: LRSchedulerType = "step": must be "linear", "cosine" or "constant"`}},
		{"warmup ratio", func(c *Config) { c.WarmupRatio = 2 }, []string{"grpo: config: WarmupRatio = 2: must be in [0, 1]"}},
		{"log completions without dir", func(c *Config) { c.LogCompletions = true },
			[]string{"grpo: config: LogCompletions = true: needs an OutputDir"}},
		{"save total limit", func(c *Config) { c.SaveTotalLimit = -1 },
			[]string{"grpo: config: SaveTotalLimit = -1: must be ≥ 0"}},
		{"episode select", func(c *Config) { c.EpisodeSelect = "first" },
			[]string{`grpo: config: EpisodeSelect = "first": must be "random" or "best"`}},
		{"several at once", func(c *Config) { c.BatchSize = 0; c.LearningRate = math.Inf(1); c.AdamBeta2 = 1; c.MaxTurns = 0 },
			[]string{
				"grpo: config: BatchSize = 0: must be at least 1",
				"grpo: config: LearningRate = +Inf: must be a finite number ≥ 0",
				"grpo: config: AdamBeta2 = 1: must be in [0, 1)",
				"grpo: config: MaxTurns = 0: must be at least 1",
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := DefaultConfig()
			tc.modify(&c)
			err := c.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %q", tc.want)
			}
			lines := strings.Split(err.Error(), "\n")
			if len(lines) != len(tc.want) {
				t.Fatalf("Validate() reported %d problems, want %d:\n%v", len(lines), len(tc.want), err)
			}
			for i, w := range tc.want {
				if !strings.HasPrefix(lines[i], w) {
					t.Errorf("problem %d = %q, want prefix %q", i, lines[i], w)
				}
			}
			var fe *FieldError
			if !errors.As(err, &fe) {
				t.Errorf("errors.As(*FieldError) failed for %v", err)
			}
		})
	}
}

func TestLearningRateAt(t *testing.T) {
	c := DefaultConfig()
	c.LearningRate = 1
	c.WarmupSteps = 2
	tests := []struct {
		sched Schedule
		step  int
		want  float64
	}{
		{ScheduleLinear, 0, 0}, {ScheduleLinear, 1, 0.5}, {ScheduleLinear, 2, 1}, {ScheduleLinear, 6, 0.5}, {ScheduleLinear, 10, 0},
		{ScheduleCosine, 2, 1}, {ScheduleCosine, 6, 0.5}, {ScheduleCosine, 10, 0},
		{ScheduleConstant, 1, 0.5}, {ScheduleConstant, 9, 1},
	}
	for _, tc := range tests {
		c.LRSchedulerType = tc.sched
		if got := c.LearningRateAt(tc.step, 10); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("%s step %d: lr = %g, want %g", tc.sched, tc.step, got, tc.want)
		}
	}
	c.WarmupSteps, c.WarmupRatio = 0, 0.25 // ceil(0.25·10) = 3 warmup steps
	c.LRSchedulerType = ScheduleConstant
	if got := c.LearningRateAt(1, 10); math.Abs(got-1.0/3) > 1e-12 {
		t.Errorf("warmup ratio: lr(1) = %g, want 1/3", got)
	}
	c.WarmupSteps, c.WarmupRatio = 0.25, 0 // transformers 5: warmup_steps 0.25 is the same ratio
	if got := c.LearningRateAt(1, 10); math.Abs(got-1.0/3) > 1e-12 {
		t.Errorf("warmup_steps 0.25: lr(1) = %g, want 1/3", got)
	}
	if c, err := DecodeConfig([]byte(`{"warmup_steps": 0.1}`)); err != nil || c.WarmupSteps != 0.1 {
		t.Errorf("warmup_steps 0.1: %v, %v", c.WarmupSteps, err)
	}
}

func TestBucket(t *testing.T) {
	tests := []struct{ n, limit, want int }{
		{0, 0, 1}, {1, 0, 1}, {3, 0, 4}, {8, 0, 8}, {9, 0, 16}, {9, 12, 12}, {12, 12, 12}, {13, 12, 16}, {32, 0, 32},
		{33, 0, 40}, {80, 512, 80}, {100, 256, 112}, {129, 0, 160}, {160, 256, 160}, {161, 256, 192}, {224, 0, 224}, {225, 256, 256}, {300, 512, 320}, {300, 256, 320},
	}
	for _, tc := range tests {
		if got := bucket(tc.n, tc.limit); got != tc.want {
			t.Errorf("bucket(%d, %d) = %d, want %d", tc.n, tc.limit, got, tc.want)
		}
	}
}

// TestConfigTRLNames decodes a TRL 1.10 GRPOConfig written with TRL's names,
// including scale_rewards as TRL's booleans.
func TestConfigTRLNames(t *testing.T) {
	for _, tc := range []struct {
		scale string
		want  loss.ScaleRewards
	}{{`true`, loss.ScaleGroup}, {`false`, loss.ScaleNone}, {`"batch"`, loss.ScaleBatch}, {`"none"`, loss.ScaleNone}} {
		c := DefaultConfig()
		doc := `{"loss_type": "luspo", "importance_sampling_level": "sequence", "delta": 1.5, "epsilon_high": 0.28,
			"top_entropy_quantile": 0.2, "off_policy_mask_threshold": 0.5, "use_bias_correction_kl": true,
			"sapo_temperature_pos": 0.9, "vespo_k_neg": 4, "entropy_coef": 0.01, "scale_rewards": ` + tc.scale + `,
			"multi_objective_aggregation": "normalize_then_sum", "reward_weights": [1, 0.5]}`
		if err := json.Unmarshal([]byte(doc), &c); err != nil {
			t.Fatalf("scale_rewards %s: %v", tc.scale, err)
		}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		if c.ScaleRewards != tc.want || c.LossType != loss.LUSPO || c.ImportanceSamplingLevel != loss.LevelSequence ||
			c.Delta == nil || *c.Delta != 1.5 || c.TopEntropyQuantile != 0.2 || c.OffPolicyMaskThreshold == nil ||
			*c.OffPolicyMaskThreshold != 0.5 || !c.UseBiasCorrectionKL || c.SAPOTemperaturePos != 0.9 ||
			c.VESPOKNeg != 4 || c.EntropyCoef != 0.01 || c.MultiObjectiveAggregation != loss.NormalizeThenSum ||
			len(c.RewardWeights) != 2 {
			t.Errorf("scale_rewards %s: decoded %+v", tc.scale, c)
		}
	}
	var c Config
	if err := json.Unmarshal([]byte(`{"scale_rewards": 1}`), &c); err == nil || !strings.Contains(err.Error(), "scale_rewards") {
		t.Errorf("scale_rewards 1: err = %v, want a scale_rewards error", err)
	}
}
