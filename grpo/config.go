package grpo

import (
	"errors"
	"fmt"
	"math"

	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/model"
)

// Schedule names a learning-rate schedule after the warmup (HF
// lr_scheduler_type).
type Schedule string

// The learning-rate schedules: linear decay to 0, half-cosine decay to 0, or
// constant.
const (
	ScheduleLinear   Schedule = "linear"
	ScheduleCosine   Schedule = "cosine"
	ScheduleConstant Schedule = "constant"
)

// EpisodeSelect names which of the G completions of a turn continues a
// multi-turn episode.
type EpisodeSelect string

// The episode selections: a uniformly random completion of the group
// (seeded, so the trajectory follows the policy) or the best-rewarded one
// (lowest index on ties).
const (
	SelectRandom EpisodeSelect = "random"
	SelectBest   EpisodeSelect = "best"
)

// Config holds the GRPO hyperparameters. Field names follow TRL's GRPOConfig
// (and HF TrainingArguments) so TRL users find their options; each field
// gives its TRL name and default. Start from DefaultConfig: zero is a real
// value for several fields (Beta 0 means no reference model). NewTrainer
// calls Validate.
//
// One optimizer step uses BatchSize × GradientAccumulationSteps completions.
// They come from generation batches of GenerationBatchSize = BatchSize ×
// StepsPerGeneration completions (GenerationBatchSize / NumGenerations
// prompts, or episodes for an Env), generated, scored and turned into
// advantages as a whole (TRL 1.16); by default StepsPerGeneration is
// GradientAccumulationSteps, one generation batch per optimizer step.
type Config struct {
	// NumGenerations is G, the completions sampled per prompt. Default 8;
	// at least 2. TRL: num_generations.
	NumGenerations int `json:"num_generations"`
	// BatchSize is the completions in one micro-batch (one forward and
	// backward pass). Default 8. TRL: per_device_train_batch_size.
	BatchSize int `json:"per_device_train_batch_size"`
	// GradientAccumulationSteps is the micro-batches per optimizer step.
	// Default 1. TRL: gradient_accumulation_steps.
	GradientAccumulationSteps int `json:"gradient_accumulation_steps"`
	// StepsPerGeneration is the micro-batches (BatchSize completions each)
	// one generation batch feeds: GenerationBatchSize = BatchSize ×
	// StepsPerGeneration completions are generated, scored and turned into
	// advantages (with dynamic sampling, if on) at once, then fed to the
	// optimizer one micro-batch at a time, GradientAccumulationSteps per
	// optimizer step; with NumIterations > 1 the sequence repeats. The
	// batch's rows are shuffled (seeded) first when it feeds more than one
	// optimizer step; dapo, cispo and vespo divide by its token count (see
	// LOSSES.md). An Env or DropZeroStdGroups needs it to be a multiple of
	// GradientAccumulationSteps. 0 means TRL's None:
	// GradientAccumulationSteps (one generation batch per optimizer step).
	// Set at most one of
	// StepsPerGeneration and GenerationBatchSize. Default 0. TRL 1.16:
	// steps_per_generation.
	StepsPerGeneration int `json:"steps_per_generation"`
	// GenerationBatchSize is the completions generated at once, a multiple
	// of BatchSize and of NumGenerations; it sets StepsPerGeneration =
	// GenerationBatchSize / BatchSize. 0 means TRL's None (BatchSize ×
	// StepsPerGeneration). Default 0. TRL 1.16: generation_batch_size.
	GenerationBatchSize int `json:"generation_batch_size"`
	// MaxSteps is the number of optimizer steps; it also sets the length of
	// the learning-rate schedule. When > 0 it wins over NumTrainEpochs, as
	// in HF; 0 means NumTrainEpochs passes over the Dataset (an Env needs
	// MaxSteps > 0). Default 0. TRL: max_steps (HF's -1 is our 0).
	MaxSteps int `json:"max_steps"`
	// NumTrainEpochs is the passes over the Dataset when MaxSteps is 0
	// (fractions allowed; see TrainSteps). Default 3.0, HF's. HF:
	// num_train_epochs.
	NumTrainEpochs float64 `json:"num_train_epochs"`
	// EvalStrategy is when Trainer.EvalDataset is evaluated: EvalNo or
	// EvalByStep (every EvalSteps steps). Default "no". HF: eval_strategy.
	EvalStrategy EvalStrategy `json:"eval_strategy"`
	// EvalSteps is the optimizer steps between evaluations with
	// EvalStrategy "steps"; 0 means LoggingSteps, as HF. Default 0.
	// HF: eval_steps.
	EvalSteps int `json:"eval_steps"`
	// NumGenerationsEval is the completions made of each eval prompt:
	// 0 (the default, grpokit's own) one greedy completion; N ≥ 1, N
	// completions sampled with the training sampler (temperature, top_p,
	// top_k, min_p, repetition_penalty), as TRL's eval does. TRL 1.16:
	// num_generations_eval (TRL's None means num_generations).
	NumGenerationsEval int `json:"num_generations_eval"`
	// ShuffleDataset visits the dataset in a seeded random order, a new
	// permutation each epoch. Default true. TRL: shuffle_dataset.
	ShuffleDataset bool `json:"shuffle_dataset"`

	// MaxPromptLength is the longest prompt in tokens; longer prompts keep
	// their last MaxPromptLength tokens (TRL v0.21.0 truncated on the left;
	// TRL 1.16 has no such key and keeps prompts whole). 0 means no limit.
	// Default 512. grpokit's key (TRL v0.21.0's max_prompt_length).
	MaxPromptLength int `json:"max_prompt_length"`
	// MaxCompletionLength is the most tokens generated per completion.
	// Default 512, TRL 1.16's (TRL v0.21.0's: 256). TRL 1.16:
	// max_completion_length.
	MaxCompletionLength int `json:"max_completion_length"`
	// MaxToolCallingIterations bounds the rounds of tool calls in one
	// trajectory when the trainer has tools (Trainer.SetTools); 0 means no
	// bound but MaxCompletionLength, which bounds a whole trajectory (the
	// model's tokens and the inserted ones). Default 0 (TRL's None). TRL
	// 1.10: max_tool_calling_iterations.
	MaxToolCallingIterations int `json:"max_tool_calling_iterations"`
	// Sampling holds the sampler's settings under TRL's names: temperature
	// (default 1.0; must be > 0: it also divides the logits of the
	// log-probs), top_p (default 1.0, all tokens; in (0, 1]), top_k
	// (default 0, disabled), min_p (TRL 1.16; default 0, TRL's None; in
	// [0, 1]) and repetition_penalty (TRL 1.16; default 1, none; must be
	// > 0). See model.Sampling.
	model.Sampling
	// MinCompletionLength keeps EOS (and the other stop tokens) from being
	// sampled before a completion has this many tokens; equal to
	// MaxCompletionLength it forces every completion to that length
	// (benchmarks do). Default 0, in [0, MaxCompletionLength]. HF generate's
	// min_new_tokens (TRL passes it in generation_kwargs).
	MinCompletionLength int `json:"min_completion_length"`
	// GenerationKwargs set the sampling settings by their transformers
	// GenerationConfig names, overriding the fields above as TRL's
	// generation_kwargs do (see ApplyGenerationKwargs). Default nil. TRL:
	// generation_kwargs.
	GenerationKwargs map[string]any `json:"generation_kwargs"`
	// MaskTruncatedCompletions leaves truncated completions out of the
	// loss, as TRL 1.16 does: those that MaxCompletionLength cut before a
	// stop token (for a tool-calling trajectory, a model turn cut by the
	// budget). Their tokens leave the loss, the KL and entropy terms and
	// the token counts that normalize them (dapo's num_items_in_batch);
	// the rows still count among the rows (grpo's mean over rows, dr_grpo's
	// rows × MaxCompletionLength), in the group's advantages and in the
	// metrics (completions/clipped_ratio is their share). TRL calls a
	// completion truncated when its last token is neither EOS nor the pad
	// token; here it is one that no stop id ended (the tokenizer's EOS
	// ids, generation_config's included). The two differ only for a
	// completion cut at the limit just after a pad token the model
	// generated (TRL: ended) and one ended by a stop id that is neither
	// EOS nor pad, such as Llama 3's <|eom_id|> (TRL: truncated). Default
	// false. TRL: mask_truncated_completions.
	MaskTruncatedCompletions bool `json:"mask_truncated_completions"`

	// Beta weights the KL term (k3 estimator) against the reference model,
	// which is the policy without its adapters (LoRA) or a frozen copy (full
	// fine-tuning). Default 0: no reference log-probs are computed.
	// TRL: beta.
	Beta float64 `json:"beta"`
	// SyncRefModel moves the reference model toward the policy every
	// RefModelSyncSteps optimizer steps, as TR-DPO (Gorbatovski et al.,
	// 2024) and TRL's SyncRefModelCallback do: after step k with k a
	// multiple of RefModelSyncSteps, every reference weight becomes
	// RefModelMixupAlpha × the policy's + (1 − RefModelMixupAlpha) × its
	// own, in float32. It needs Beta ≠ 0 (with Beta 0 there is no
	// reference model) and a reference of its own: full fine-tuning's
	// copy. A LoRA policy's reference is its base model without the
	// adapter, so NewTrainer refuses it, as TRL refuses a PEFT model.
	// Checkpoints then hold the reference weights too. Default false.
	// TRL: sync_ref_model.
	SyncRefModel bool `json:"sync_ref_model"`
	// RefModelMixupAlpha is TR-DPO's α, the policy's share in each
	// reference update (SyncRefModel), in [0, 1]: 1 copies the policy, 0
	// keeps the reference. Default 0.6. TRL: ref_model_mixup_alpha.
	RefModelMixupAlpha float64 `json:"ref_model_mixup_alpha"`
	// RefModelSyncSteps is TR-DPO's τ, the optimizer steps between
	// reference updates (SyncRefModel); at least 1. Default 512. TRL:
	// ref_model_sync_steps.
	RefModelSyncSteps int `json:"ref_model_sync_steps"`
	// Epsilon is the lower clip bound: ratios below 1-Epsilon are clipped.
	// Default 0.2. TRL: epsilon.
	Epsilon float64 `json:"epsilon"`
	// EpsilonHigh is the upper clip bound (ratios above 1+EpsilonHigh are
	// clipped); 0 means "same as Epsilon" (TRL's None). DAPO recommends
	// 0.28. With loss.CISPO it is the absolute cap of the ratio (ScaleRL
	// recommends 5.0). Default 0. TRL 1.16: epsilon_high.
	EpsilonHigh float64 `json:"epsilon_high"`
	// Delta, when set, caps the ratio of the unclipped branch of the
	// clipped surrogate (two-sided clipping, INTELLECT-2); it should be
	// above 1+EpsilonHigh. Default nil (off). TRL 1.16: delta.
	Delta *float64 `json:"delta"`
	// LossType picks the policy term and its normalization; see LossType
	// and loss/LOSSES.md. Default loss.DAPO, TRL 1.16's default (TRL
	// v0.21.0's was loss.BNPO). TRL 1.16: loss_type.
	LossType loss.Type `json:"loss_type"`
	// ImportanceSamplingLevel forms the importance weight per token or,
	// loss.LevelSequence (GSPO), once per completion from its mean log-ratio.
	// Default LevelToken. TRL 1.16: importance_sampling_level.
	ImportanceSamplingLevel loss.ImportanceSamplingLevel `json:"importance_sampling_level"`
	// SAPOTemperaturePos and SAPOTemperatureNeg are loss.SAPO's gate
	// temperatures for A > 0 and A ≤ 0. Defaults 1.0 and 1.05. TRL 1.16:
	// sapo_temperature_pos, sapo_temperature_neg.
	SAPOTemperaturePos float64 `json:"sapo_temperature_pos"`
	SAPOTemperatureNeg float64 `json:"sapo_temperature_neg"`
	// VESPOKPos, VESPOLambdaPos, VESPOKNeg and VESPOLambdaNeg are loss.VESPO's
	// gamma-weight exponent k and decay λ for A ≥ 0 and A < 0. Defaults 2,
	// 3, 3, 2. TRL 1.16: vespo_k_pos, vespo_lambda_pos, vespo_k_neg,
	// vespo_lambda_neg.
	VESPOKPos      float64 `json:"vespo_k_pos"`
	VESPOLambdaPos float64 `json:"vespo_lambda_pos"`
	VESPOKNeg      float64 `json:"vespo_k_neg"`
	VESPOLambdaNeg float64 `json:"vespo_lambda_neg"`
	// TopEntropyQuantile ρ keeps the policy term only on the micro-batch's
	// top-ρ tokens by entropy ("Beyond the 80/20 Rule" recommends 0.2); 1
	// keeps every token. In [0, 1]. Default 1. TRL 1.16:
	// top_entropy_quantile.
	TopEntropyQuantile float64 `json:"top_entropy_quantile"`
	// OffPolicyMaskThreshold, when set, drops the policy term of
	// completions with a negative advantage whose mean log(π_old/π) exceeds
	// it (DeepSeek-V3.2's off-policy sequence mask; e.g. 0.5). Default nil
	// (off). TRL 1.16: off_policy_mask_threshold.
	OffPolicyMaskThreshold *float64 `json:"off_policy_mask_threshold"`
	// UseBiasCorrectionKL multiplies the KL term by the importance weight
	// (DeepSeek-V3.2), so that its gradient is the unbiased reverse-KL
	// gradient. The weight is differentiable, so this changes the KL
	// gradient whenever Beta ≠ 0, on-policy too (where its value is 1).
	// Default true (TRL 1.16; TRL 1.10's default was false).
	// TRL: use_bias_correction_kl.
	UseBiasCorrectionKL bool `json:"use_bias_correction_kl"`
	// ScaleRewards divides centred rewards by the group's or the batch's
	// standard deviation (unbiased, plus 1e-4) or by nothing; JSON also
	// takes TRL's true ("group") and false ("none"). Default loss.ScaleGroup.
	// TRL 1.16: scale_rewards.
	ScaleRewards loss.ScaleRewards `json:"scale_rewards"`
	// MultiObjectiveAggregation combines several rewards: loss.SumThenNormalize
	// (weighted sum, then ScaleRewards) or loss.NormalizeThenSum (GDPO). Default
	// loss.SumThenNormalize. TRL 1.16: multi_objective_aggregation.
	MultiObjectiveAggregation loss.Aggregation `json:"multi_objective_aggregation"`
	// RewardWeights, when set, gives one weight per reward (in the order
	// passed to NewTrainer) and replaces their reward.Named weights. Default
	// nil. TRL 1.16: reward_weights.
	RewardWeights []float64 `json:"reward_weights"`
	// NumIterations is μ, the optimizer steps taken on each batch of
	// rollouts; above 1 the ratio uses the log-probs saved at generation.
	// Default 1. TRL: num_iterations.
	NumIterations int `json:"num_iterations"`
	// EntropyCoef, when > 0, subtracts EntropyCoef × the mean token entropy
	// (over each micro-batch's entropy-masked loss tokens, for every loss
	// type, as TRL 1.16; see loss.EntropyBonus) from the loss; the step logs
	// policy_loss and entropy_coef. Default 0. TRL: entropy_coef.
	EntropyCoef float64 `json:"entropy_coef"`
	// UseAdaptiveEntropy is Skywork-OR1's adaptive entropy control, as TRL
	// 1.10: EntropyCoef is the starting coefficient; after each optimizer
	// step it grows by EntropyCoefDelta when the step's mean token entropy
	// (over the entropy-masked tokens) was at most EntropyTarget and
	// shrinks by it otherwise, within [EntropyCoefMin, EntropyCoefMax];
	// a step applies the coefficient only when the previous step's entropy
	// was at most EntropyTarget (the first step applies none). The
	// coefficient and the last entropy are kept in checkpoints. Default
	// false. TRL 1.16: use_adaptive_entropy.
	UseAdaptiveEntropy bool `json:"use_adaptive_entropy"`
	// EntropyCoefMin and EntropyCoefMax bound the adaptive coefficient
	// (defaults 0 and 1), EntropyCoefDelta is its step (default 0.005)
	// and EntropyTarget the entropy in nats it holds (default 0.2). TRL
	// 1.10: entropy_coef_min, entropy_coef_max, entropy_coef_delta,
	// entropy_target.
	EntropyCoefMin   float64 `json:"entropy_coef_min"`
	EntropyCoefMax   float64 `json:"entropy_coef_max"`
	EntropyCoefDelta float64 `json:"entropy_coef_delta"`
	EntropyTarget    float64 `json:"entropy_target"`
	// DynamicSampling is DAPO's dynamic sampling (not in TRL): groups whose
	// rewards all tie carry no signal, so after each generation the trainer
	// draws more prompts (uniformly, seeded) until the batch holds
	// PromptsPerGeneration groups with reward spread or DynamicSamplingMaxRounds
	// extra rounds are spent; then it tops up with tied groups. The step
	// logs dynamic_sampling/groups_drawn, groups_dropped and rounds.
	// Train only (TrainEnv rejects it). Default false.
	DynamicSampling bool `json:"dynamic_sampling"`
	// DynamicSamplingMaxRounds bounds the extra generation rounds of one
	// batch (DAPO's max_num_gen_batches); at least 1 with DynamicSampling.
	// Default 10.
	DynamicSamplingMaxRounds int `json:"dynamic_sampling_max_rounds"`
	// DropZeroStdGroups leaves groups whose rewards all tie out of the loss
	// (their advantages are 0 anyway; this keeps them from diluting the
	// token normalizer — DAPO's dynamic sampling without resampling).
	// Default false.
	DropZeroStdGroups bool `json:"drop_zero_std_groups"`

	// LearningRate is the peak learning rate of AdamW. Default 1e-6.
	// TRL: learning_rate.
	LearningRate float64 `json:"learning_rate"`
	// LRSchedulerType is the decay after warmup. Default ScheduleLinear.
	// TRL: lr_scheduler_type.
	LRSchedulerType Schedule `json:"lr_scheduler_type"`
	// WarmupSteps is the linear warmup from 0, in optimizer steps (a
	// fraction is dropped, as HF's int()); a value in (0, 1) is a fraction
	// of the run's steps instead, rounded up, as transformers 5 reads it.
	// When 0, WarmupRatio is used. Default 0. TRL: warmup_steps.
	WarmupSteps float64 `json:"warmup_steps"`
	// WarmupRatio is the warmup as a fraction of the run's steps, in [0, 1]
	// (transformers 4's warmup_ratio, which transformers 5 folded into
	// warmup_steps). Default 0.
	WarmupRatio float64 `json:"warmup_ratio"`
	// WeightDecay is AdamW's decoupled weight decay. Default 0.
	// TRL: weight_decay.
	WeightDecay float64 `json:"weight_decay"`
	// AdamBeta1 is Adam's first-moment decay. Default 0.9. TRL: adam_beta1.
	AdamBeta1 float64 `json:"adam_beta1"`
	// AdamBeta2 is Adam's second-moment decay. Default 0.999.
	// TRL: adam_beta2.
	AdamBeta2 float64 `json:"adam_beta2"`
	// AdamEpsilon is Adam's denominator term. Default 1e-8.
	// TRL: adam_epsilon.
	AdamEpsilon float64 `json:"adam_epsilon"`
	// MaxGradNorm clips the gradients' global L2 norm; 0 disables clipping.
	// Default 1.0. TRL: max_grad_norm.
	MaxGradNorm float64 `json:"max_grad_norm"`
	// GradientCheckpointing recomputes each decoder layer's activations
	// in the backward pass instead of keeping them from the forward pass:
	// only each layer's input is kept, for about one more forward pass of
	// time. Policies that do not support it ignore it (LMPolicy does; with
	// LoRA dropout it is an error: set it false to train with dropout).
	// Default true, as TRL's GRPOConfig. TRL: gradient_checkpointing.
	GradientCheckpointing bool `json:"gradient_checkpointing"`
	// LogitsChunkSize is how many completion positions the loss maps to
	// logits at a time (a HeadPolicy's, such as LMPolicy's): the
	// [B, C, vocabulary] logits and their softmax are never held whole, and
	// each chunk's logits are made again in the backward pass. 0 picks
	// chunks of about 8 Mi logits (32 MiB). Default 0.
	LogitsChunkSize int `json:"logits_chunk_size"`
	// SharePrompts computes each prompt once in the training passes (the
	// loss's forward and backward, and the old and reference log-probs)
	// when a micro-batch holds whole groups of a prompt's completions:
	// the prompt's tokens run through the layers once per group instead
	// of once per completion (model.GroupedHiddenGraph), which for a
	// prompt of P tokens and completions of C saves about (G−1)/G·P/(P+C)
	// of the work. The loss and gradients are the same sums as with every
	// row whole, up to float32 rounding (a group's terms meet in another
	// order), so trained weights differ from TRL's in their last bits as
	// they would with another kernel. false runs every row whole, as TRL.
	// Policies other than LMPolicy may ignore it. Default true.
	SharePrompts bool `json:"share_prompts"`

	// Seed seeds shuffling, sampling and episode choices; the same seed
	// gives the same run. Default 42. TRL: seed.
	Seed int64 `json:"seed"`
	// LoggingSteps is how often (in optimizer steps) a progress line is
	// written; 0 means never. Metrics go to the JSONL file every step.
	// Default 10. TRL: logging_steps.
	LoggingSteps int `json:"logging_steps"`
	// SaveSteps is how often a checkpoint is written under OutputDir; 0
	// means only at the end and on cancellation. Default 500.
	// TRL: save_steps.
	SaveSteps int `json:"save_steps"`
	// SaveTotalLimit is how many checkpoints to keep under OutputDir: after
	// each save the oldest beyond it are deleted. 0 keeps them all.
	// Default 0. TRL: save_total_limit.
	SaveTotalLimit int `json:"save_total_limit"`
	// OutputDir receives metrics.jsonl, rollouts.jsonl and checkpoints.
	// Empty means nothing is written. Default "". TRL: output_dir.
	OutputDir string `json:"output_dir"`
	// LogCompletions writes every rollout (prompt, completion, each reward,
	// advantage) to OutputDir/rollouts.jsonl and, at every progress line,
	// prints a table of the last generation batch's completions to
	// Trainer.Progress (see NumCompletionsToPrint). Default false.
	// TRL: log_completions.
	LogCompletions bool `json:"log_completions"`
	// NumCompletionsToPrint is how many completions that table shows,
	// drawn at random (seeded by Seed and the step); nil means all, 0 none.
	// rollouts.jsonl holds every one whatever it is. Default nil.
	// TRL: num_completions_to_print.
	NumCompletionsToPrint *int `json:"num_completions_to_print"`
	// LogUniquePrompts shows one completion per distinct prompt in that
	// table (the first of each, before NumCompletionsToPrint draws). In
	// TRL it thins the table sent to wandb or trackio; grpokit has no
	// tracker, and rollouts.jsonl keeps every row. Default false.
	// TRL: log_unique_prompts.
	LogUniquePrompts bool `json:"log_unique_prompts"`

	// EpisodeSelect picks the completion that continues a multi-turn
	// episode. Default SelectRandom.
	EpisodeSelect EpisodeSelect `json:"episode_select"`
	// MaxTurns caps the turns of one episode, whatever the Env says.
	// Default 16.
	MaxTurns int `json:"max_turns"`

	// Reliability settings; a resumed run may change them.

	// OverwriteOutputDir lets a run that is not resumed start in an
	// OutputDir holding another run: that run's metrics, rollouts and
	// checkpoints are deleted first. Without it such a start is an error
	// wrapping checkpoint.ErrOutputDirInUse. Default false. grpokit's key
	// (transformers 4's overwrite_output_dir, which transformers 5 dropped).
	OverwriteOutputDir bool `json:"overwrite_output_dir"`
	// SaveMinutes, when > 0, also writes a checkpoint after any step that
	// ends at least this many minutes after the last save, so that a killed
	// run loses minutes whatever its step time (DefaultSaveMinutes is a
	// good value). Default 0 (SaveSteps only, as TRL).
	SaveMinutes float64 `json:"save_minutes"`
	// MaxNonFiniteSteps is how many consecutive steps whose loss or
	// gradient norm is NaN or ±Inf are skipped (not applied, counted in
	// the metrics) before training stops with an error wrapping
	// ErrNonFinite. Default 3; at least 1.
	MaxNonFiniteSteps int `json:"max_nonfinite_steps"`
	// RewardTimeout bounds each reward call, in seconds; a call that runs
	// longer scores 0 and counts as a failure. 0 means reward.DefaultTimeout
	// (10 s). Default 0.
	RewardTimeout float64 `json:"reward_timeout"`
	// RewardWorkers bounds how many reward calls run at once; 0 means
	// GOMAXPROCS. Default 0.
	RewardWorkers int `json:"reward_workers"`
}

// DefaultConfig returns TRL 1.16's GRPOConfig defaults, with BatchSize 8
// and G 8 (one prompt per step). TRL v0.21.0's defaults differ in
// LossType (loss.BNPO) and MaxCompletionLength (256).
func DefaultConfig() Config {
	return Config{
		NumGenerations:            8,
		BatchSize:                 8,
		GradientAccumulationSteps: 1,
		NumTrainEpochs:            3,
		EvalStrategy:              EvalNo,
		ShuffleDataset:            true,
		MaxPromptLength:           512,
		MaxCompletionLength:       512,
		Sampling:                  model.Sampling{Temperature: 1.0, TopP: 1.0, RepetitionPenalty: 1.0},
		RefModelMixupAlpha:        0.6,
		RefModelSyncSteps:         512,
		Epsilon:                   0.2,
		LossType:                  loss.DAPO,
		ImportanceSamplingLevel:   loss.LevelToken,
		SAPOTemperaturePos:        1.0,
		SAPOTemperatureNeg:        1.05,
		VESPOKPos:                 2,
		VESPOLambdaPos:            3,
		VESPOKNeg:                 3,
		VESPOLambdaNeg:            2,
		TopEntropyQuantile:        1.0,
		EntropyCoefMax:            1,
		EntropyCoefDelta:          0.005,
		EntropyTarget:             0.2,
		ScaleRewards:              loss.ScaleGroup,
		MultiObjectiveAggregation: loss.SumThenNormalize,
		NumIterations:             1,
		DynamicSamplingMaxRounds:  10,
		LearningRate:              1e-6,
		LRSchedulerType:           ScheduleLinear,
		AdamBeta1:                 0.9,
		AdamBeta2:                 0.999,
		AdamEpsilon:               1e-8,
		MaxGradNorm:               1.0,
		Seed:                      42,
		LoggingSteps:              10,
		SaveSteps:                 500,
		EpisodeSelect:             SelectRandom,
		MaxTurns:                  16,
		MaxNonFiniteSteps:         3,
		GradientCheckpointing:     true,
		SharePrompts:              true,
		UseBiasCorrectionKL:       true,
	}
}

// FieldError is one invalid Config field.
type FieldError struct {
	Field  string // Go field name, e.g. "NumGenerations"
	Value  any    // the offending value
	Reason string // what is required
}

// Error returns "grpo: config: Field = value: reason".
func (e *FieldError) Error() string {
	return fmt.Sprintf("grpo: config: %s = %v: %s", e.Field, e.Value, e.Reason)
}

// EffectiveEpsilonHigh returns EpsilonHigh, or Epsilon when it is 0.
func (c Config) EffectiveEpsilonHigh() float64 {
	if c.EpsilonHigh == 0 {
		return c.Epsilon
	}
	return c.EpsilonHigh
}

// PromptsPerStep returns the prompts (or episodes) sampled per optimizer
// step: BatchSize × GradientAccumulationSteps / NumGenerations, rounded
// down (a step may hold part of a group when StepsPerGeneration is set).
func (c Config) PromptsPerStep() int {
	if c.NumGenerations <= 0 {
		return 0
	}
	return c.BatchSize * c.GradientAccumulationSteps / c.NumGenerations
}

// EffectiveStepsPerGeneration returns StepsPerGeneration as TRL 1.16's
// GRPOConfig resolves it: GenerationBatchSize / BatchSize when that is
// set, else StepsPerGeneration, else GradientAccumulationSteps.
func (c Config) EffectiveStepsPerGeneration() int {
	switch {
	case c.StepsPerGeneration > 0:
		return c.StepsPerGeneration
	case c.GenerationBatchSize > 0 && c.BatchSize > 0:
		return c.GenerationBatchSize / c.BatchSize
	}
	return c.GradientAccumulationSteps
}

// EffectiveGenerationBatchSize returns the completions of one generation
// batch: BatchSize × EffectiveStepsPerGeneration (TRL 1.16's
// generation_batch_size, one process).
func (c Config) EffectiveGenerationBatchSize() int {
	return c.BatchSize * c.EffectiveStepsPerGeneration()
}

// PromptsPerGeneration returns the prompts (or episodes) of one
// generation batch: EffectiveGenerationBatchSize / NumGenerations.
func (c Config) PromptsPerGeneration() int {
	if c.NumGenerations <= 0 {
		return 0
	}
	return c.EffectiveGenerationBatchSize() / c.NumGenerations
}

// Validate reports every invalid field at once, joined with errors.Join;
// each is a *FieldError. It returns nil for a valid Config.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, value any, reason string) {
		errs = append(errs, &FieldError{Field: field, Value: value, Reason: reason})
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

	if c.NumGenerations < 2 {
		bad("NumGenerations", c.NumGenerations, "must be at least 2 (advantages compare completions of one prompt)")
	}
	if c.MaxToolCallingIterations < 0 {
		bad("MaxToolCallingIterations", c.MaxToolCallingIterations, "must be ≥ 0 (0: no bound)")
	}
	if c.LogitsChunkSize < 0 {
		bad("LogitsChunkSize", c.LogitsChunkSize, "must be at least 0 (0 picks)")
	}
	if c.BatchSize < 1 {
		bad("BatchSize", c.BatchSize, "must be at least 1")
	}
	if c.GradientAccumulationSteps < 1 {
		bad("GradientAccumulationSteps", c.GradientAccumulationSteps, "must be at least 1")
	}
	errs = append(errs, c.validateGeneration()...)
	if c.MaxSteps < 0 {
		bad("MaxSteps", c.MaxSteps, "must be ≥ 0 (0 means NumTrainEpochs passes over the dataset)")
	}
	if c.MaxPromptLength < 0 {
		bad("MaxPromptLength", c.MaxPromptLength, "must be ≥ 0 (0 means no limit)")
	}
	if c.MaxCompletionLength < 1 {
		bad("MaxCompletionLength", c.MaxCompletionLength, "must be at least 1")
	}
	if c.MinCompletionLength < 0 || c.MinCompletionLength > max(c.MaxCompletionLength, 0) {
		bad("MinCompletionLength", c.MinCompletionLength, "must be in [0, MaxCompletionLength]")
	}
	if !(c.Temperature > 0) || !finite(c.Temperature) {
		bad("Temperature", c.Temperature, "must be a finite number > 0")
	}
	if !(c.TopP > 0 && c.TopP <= 1) {
		bad("TopP", c.TopP, "must be in (0, 1]")
	}
	if !(c.MinP >= 0 && c.MinP <= 1) {
		bad("MinP", c.MinP, "must be in [0, 1] (0 disables min-p)")
	}
	if !(c.RepetitionPenalty > 0) || !finite(c.RepetitionPenalty) {
		bad("RepetitionPenalty", c.RepetitionPenalty, "must be a finite number > 0 (1 means none)")
	}
	if c.TopK < 0 {
		bad("TopK", c.TopK, "must be ≥ 0 (0 disables top-k)")
	}
	if !(c.Beta >= 0) || !finite(c.Beta) {
		bad("Beta", c.Beta, "must be a finite number ≥ 0")
	}
	if c.SyncRefModel {
		if c.Beta == 0 {
			bad("SyncRefModel", true, "needs Beta ≠ 0: with beta 0 no reference model is used, so there is nothing to sync (set sync_ref_model false or beta > 0)")
		}
		if !(c.RefModelMixupAlpha >= 0 && c.RefModelMixupAlpha <= 1) {
			bad("RefModelMixupAlpha", c.RefModelMixupAlpha, "must be in [0, 1] (the policy's share in each reference update)")
		}
		if c.RefModelSyncSteps < 1 {
			bad("RefModelSyncSteps", c.RefModelSyncSteps, "must be at least 1 (optimizer steps between reference updates)")
		}
	}
	if !(c.Epsilon > 0 && c.Epsilon < 1) {
		bad("Epsilon", c.Epsilon, "must be in (0, 1)")
	}
	if !(c.EpsilonHigh >= 0) || !finite(c.EpsilonHigh) {
		bad("EpsilonHigh", c.EpsilonHigh, "must be a finite number ≥ 0 (0 means same as Epsilon)")
	}
	if c.Delta != nil && (!(*c.Delta > 0) || !finite(*c.Delta)) {
		bad("Delta", *c.Delta, "must be a finite number > 0 (nil disables two-sided clipping)")
	}
	switch c.LossType {
	case loss.GRPO, loss.BNPO, loss.DrGRPO, loss.DAPO, loss.CISPO, loss.SAPO, loss.LUSPO, loss.VESPO:
	default:
		bad("LossType", fmt.Sprintf("%q", c.LossType), `must be "grpo", "bnpo", "dr_grpo", "dapo", "cispo", "sapo", "luspo" or "vespo"`)
	}
	switch c.ImportanceSamplingLevel {
	case loss.LevelToken, loss.LevelSequence:
	default:
		bad("ImportanceSamplingLevel", fmt.Sprintf("%q", c.ImportanceSamplingLevel), `must be "token" or "sequence"`)
	}
	// luspo at token level is allowed, as TRL 1.16 allows it (with a
	// warning: the paper's setup is "sequence").
	if !(c.SAPOTemperaturePos > 0) || !finite(c.SAPOTemperaturePos) {
		bad("SAPOTemperaturePos", c.SAPOTemperaturePos, "must be a finite number > 0")
	}
	if !(c.SAPOTemperatureNeg > 0) || !finite(c.SAPOTemperatureNeg) {
		bad("SAPOTemperatureNeg", c.SAPOTemperatureNeg, "must be a finite number > 0")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"VESPOKPos", c.VESPOKPos}, {"VESPOLambdaPos", c.VESPOLambdaPos}, {"VESPOKNeg", c.VESPOKNeg}, {"VESPOLambdaNeg", c.VESPOLambdaNeg}} {
		if !(f.v >= 0) || !finite(f.v) {
			bad(f.name, f.v, "must be a finite number ≥ 0")
		}
	}
	if !(c.TopEntropyQuantile >= 0 && c.TopEntropyQuantile <= 1) {
		bad("TopEntropyQuantile", c.TopEntropyQuantile, "must be in [0, 1] (1 keeps every token)")
	}
	if c.OffPolicyMaskThreshold != nil && !finite(*c.OffPolicyMaskThreshold) {
		bad("OffPolicyMaskThreshold", *c.OffPolicyMaskThreshold, "must be a finite number (nil disables the mask)")
	}
	switch c.ScaleRewards {
	case loss.ScaleGroup, loss.ScaleBatch, loss.ScaleNone:
	default:
		bad("ScaleRewards", fmt.Sprintf("%q", c.ScaleRewards), `must be "group", "batch" or "none" (or true/false in JSON)`)
	}
	switch c.MultiObjectiveAggregation {
	case loss.SumThenNormalize, loss.NormalizeThenSum:
	default:
		bad("MultiObjectiveAggregation", fmt.Sprintf("%q", c.MultiObjectiveAggregation), `must be "sum_then_normalize" or "normalize_then_sum"`)
	}
	for i, w := range c.RewardWeights {
		if !finite(w) {
			bad("RewardWeights", c.RewardWeights, fmt.Sprintf("weight %d is not a finite number", i))
			break
		}
	}
	if c.DynamicSampling && c.DynamicSamplingMaxRounds < 1 {
		bad("DynamicSamplingMaxRounds", c.DynamicSamplingMaxRounds, "must be at least 1 with DynamicSampling (it bounds the extra draws)")
	}
	if c.NumIterations < 1 {
		bad("NumIterations", c.NumIterations, "must be at least 1")
	}
	if !finite(c.EntropyCoef) || c.EntropyCoef < 0 {
		bad("EntropyCoef", c.EntropyCoef, "must be a finite number ≥ 0")
	}
	if c.NumGenerationsEval < 0 {
		bad("NumGenerationsEval", float64(c.NumGenerationsEval), "must be ≥ 0 (0: one greedy completion)")
	}
	if !finite(c.EntropyCoefMin) || c.EntropyCoefMin < 0 {
		bad("EntropyCoefMin", c.EntropyCoefMin, "must be a finite number ≥ 0")
	}
	if !finite(c.EntropyCoefMax) || c.EntropyCoefMax < c.EntropyCoefMin {
		bad("EntropyCoefMax", c.EntropyCoefMax, "must be a finite number ≥ EntropyCoefMin")
	}
	if !finite(c.EntropyCoefDelta) || c.EntropyCoefDelta < 0 {
		bad("EntropyCoefDelta", c.EntropyCoefDelta, "must be a finite number ≥ 0")
	}
	if !finite(c.EntropyTarget) {
		bad("EntropyTarget", c.EntropyTarget, "must be a finite number (nats)")
	}
	if !(c.LearningRate >= 0) || !finite(c.LearningRate) {
		bad("LearningRate", c.LearningRate, "must be a finite number ≥ 0")
	}
	switch c.LRSchedulerType {
	case ScheduleLinear, ScheduleCosine, ScheduleConstant:
	default:
		bad("LRSchedulerType", fmt.Sprintf("%q", c.LRSchedulerType), `must be "linear", "cosine" or "constant"`)
	}
	if !(c.WarmupSteps >= 0) || !finite(c.WarmupSteps) {
		bad("WarmupSteps", c.WarmupSteps, "must be a finite number ≥ 0")
	}
	if !(c.WarmupRatio >= 0 && c.WarmupRatio <= 1) {
		bad("WarmupRatio", c.WarmupRatio, "must be in [0, 1]")
	}
	if !(c.WeightDecay >= 0) || !finite(c.WeightDecay) {
		bad("WeightDecay", c.WeightDecay, "must be a finite number ≥ 0")
	}
	if !(c.AdamBeta1 >= 0 && c.AdamBeta1 < 1) {
		bad("AdamBeta1", c.AdamBeta1, "must be in [0, 1)")
	}
	if !(c.AdamBeta2 >= 0 && c.AdamBeta2 < 1) {
		bad("AdamBeta2", c.AdamBeta2, "must be in [0, 1)")
	}
	if !(c.AdamEpsilon > 0) || !finite(c.AdamEpsilon) {
		bad("AdamEpsilon", c.AdamEpsilon, "must be a finite number > 0")
	}
	if !(c.MaxGradNorm >= 0) || !finite(c.MaxGradNorm) {
		bad("MaxGradNorm", c.MaxGradNorm, "must be a finite number ≥ 0 (0 disables clipping)")
	}
	if c.LoggingSteps < 0 {
		bad("LoggingSteps", c.LoggingSteps, "must be ≥ 0 (0 means no progress lines)")
	}
	if c.SaveSteps < 0 {
		bad("SaveSteps", c.SaveSteps, "must be ≥ 0")
	}
	if c.SaveTotalLimit < 0 {
		bad("SaveTotalLimit", c.SaveTotalLimit, "must be ≥ 0")
	}
	if c.LogCompletions && c.OutputDir == "" {
		bad("LogCompletions", c.LogCompletions, "needs an OutputDir to write rollouts.jsonl to")
	}
	if n := c.NumCompletionsToPrint; n != nil && *n < 0 {
		bad("NumCompletionsToPrint", *n, "must be ≥ 0 (0 prints none), or nil for all")
	}
	switch c.EpisodeSelect {
	case SelectRandom, SelectBest:
	default:
		bad("EpisodeSelect", fmt.Sprintf("%q", c.EpisodeSelect), `must be "random" or "best"`)
	}
	if c.MaxTurns < 1 {
		bad("MaxTurns", c.MaxTurns, "must be at least 1")
	}
	errs = append(errs, c.validateRunLength()...)
	errs = append(errs, c.validateReliability()...)
	return errors.Join(errs...)
}
