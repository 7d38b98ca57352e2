// Package grpo implements Group Relative Policy Optimization (GRPO) for
// small language models on GoMLX: the Trainer, its Config, the Policy
// contract (and LMPolicy, the Policy of a model package language model),
// the Env interface for multi-turn tasks, evaluation, and the metrics and
// progress a run writes.
//
// Data flows one way: a dataset.Dataset (or an Env, for multi-turn games)
// gives prompts; Policy.Generate samples G completions of each; the rewards
// (package reward, run safely by reward.Evaluator) score them;
// loss.RewardAdvantages turns scores into advantages; the loss
// (loss.TokenLoss) is built on the policy's log-probs (PolicyLogProbs) and
// the reference's; AdamW updates the policy's trainable variables. Nothing
// here knows a task; the model, LoRA and tokenizer live in their own
// packages and meet here only in LMPolicy.
//
// # Where things live
//
//   - dataset: Example, Dataset and the Parquet/JSONL/JSON readers
//     (LoadDataset).
//   - loss: advantages and the loss math of every loss type (pure,
//     golden-tested functions), and LOSSES.md on picking one.
//   - checkpoint: the checkpoint folder protocol (manifest, Latest, Prune),
//     the output folder's lock (Lock) and rules (CheckOutputDir), and the
//     run's file names (MetricsFile, RolloutsFile). Trainer.Save, Resume
//     and LatestCheckpoint here add the trainer's own files and checks.
//   - memplan: the memory plan printed before step 0, the memory budget
//     (Trainer.Memory) and Go's memory limit, which the trainer sets only
//     when Trainer.GCLimit asks.
//   - sft: supervised warm starts before GRPO.
//   - grpotest: a fake Policy and TestEnv, a conformance check for Env
//     implementations.
//
// # Usage
//
//	m, _ := model.Load("SmolLM2-135M-Instruct", nil)
//	tok, _ := tokenizer.LoadDir("SmolLM2-135M-Instruct")
//	adapter, _ := lora.Attach(m, lora.Config{R: 16, Alpha: 32})
//	policy, _ := grpo.NewLMPolicy(m, adapter, tok, nil)
//	cfg := grpo.DefaultConfig()
//	cfg.MaxSteps, cfg.OutputDir = 500, "runs/gsm8k"
//	tr, _ := grpo.NewTrainer(policy, cfg,
//		reward.Named{Name: "correct", Weight: 1, Scorer: reward.NumericMatch(1e-6)})
//	tr.Logger = slog.New(slog.NewTextHandler(os.Stderr, nil)) // warnings; nil: slog.Default()
//	path, err := tr.LatestCheckpoint() // the newest good checkpoint of cfg.OutputDir
//	switch {
//	case errors.Is(err, checkpoint.ErrNoCheckpoint): // a first run
//	case err != nil:
//		return err // checkpoints exist but none can be read
//	default:
//		if err := tr.Resume(path); err != nil {
//			return err // tr is unchanged
//		}
//	}
//	err = tr.Train(ctx, data) // or tr.TrainEnv(ctx, env)
//
// # Run length and evaluation
//
// As in HF's Trainer, Config.MaxSteps > 0 sets the run length and wins;
// with MaxSteps 0, Train runs NumTrainEpochs passes over the Dataset (see
// Config.TrainSteps; default 3). With EvalStrategy "steps", every EvalSteps
// optimizer steps the trainer completes Trainer.EvalDataset greedily,
// scores it with the training rewards (Trainer.Evaluate) and writes TRL's
// eval_reward, eval_reward_std and eval_rewards/NAME/mean lines to
// metrics.jsonl (Series(ms, "eval_reward") plots them).
//
// # What a step does
//
// Every NumIterations optimizer steps the trainer draws BatchSize ×
// GradientAccumulationSteps / NumGenerations prompts (in a seeded order,
// fixed by Config.Seed and the step, which is the data cursor), generates
// NumGenerations completions of each, scores them and computes advantages;
// with Beta > 0 it computes the reference log-probs (LoRA: the base model
// without the adapter, no second copy of the weights; full fine-tuning: a
// frozen copy, which Config.SyncRefModel moves toward the policy every
// RefModelSyncSteps steps), and with NumIterations > 1 the old log-probs.
// Rows are packed into micro-batches padded to power-of-two prompt and
// completion lengths, so one compiled graph per shape serves every step; each
// micro-batch runs one graph that adds its gradients and, on the last one,
// clips their global norm and takes the AdamW step. The learning rate
// (warmup, then linear, cosine or constant) is fed through the optimizer's
// variable, so a schedule never recompiles.
//
// Each step's metrics, named as TRL logs them, go to OutputDir/metrics.jsonl
// (see Metrics, ReadMetrics and Series for plots), a progress line goes to
// Trainer.Progress, and with LogCompletions every rollout (prompt,
// completion, each reward, advantage) goes to OutputDir/rollouts.jsonl and
// a table of sample completions follows each progress line. Warnings and
// notes (a step without learning signal, a step not applied, completions
// no reward applied to, files of an earlier run moved aside) are records
// on Trainer.Logger, a *slog.Logger (nil: slog.Default()), with their
// values as attributes.
// Checkpoints (Save, Resume) hold the trainable weights, the optimizer
// state, the RNG state, the step, the config and, with SyncRefModel, the
// reference weights; a run resumed from one
// continues bit for bit as the uninterrupted run. They are crash-consistent:
// a manifest of every file's size and SHA-256 is written last and the
// folder renamed into place, so LatestCheckpoint finds the newest complete
// one after a kill at any moment, and Resume verifies every file and
// changes the Trainer only when all of it reads. A fresh run refuses an
// OutputDir holding another run (checkpoint.ErrOutputDirInUse) unless
// Config.OverwriteOutputDir is set; checkpoint.CheckOutputDir makes that
// check, and checkpoint.Lock takes the folder's lock (handed to the
// trainer as Trainer.OutputLock), before a program writes anything of its
// own there.
//
// # Tools
//
// Trainer.SetTools makes every completion a tool-calling trajectory (TRL's
// tools and environment_factory; package agent has the tools, formats and
// the trajectory runner): the policy generates, its calls are run, their
// results appended through the chat template, and so on, up to
// Config.MaxToolCallingIterations rounds and Config.MaxCompletionLength
// tokens in all. The inserted tokens are context only: no loss, KL or
// entropy, and no count in a normalizer; rewards see the whole trajectory
// (reward.Sample.Messages, Final, Env). Metrics add tools/call_frequency,
// tools/failure_frequency and tools/turns_per_trajectory.
//
// # Errors and panics
//
// NewTrainer, Train, TrainEnv, Save, Resume, LMPolicy.Generate and
// sft.Trainer.Step return errors. Graph builders — PolicyLogProbs,
// loss.TokenLoss and Policy.Logits — panic on error, as GoMLX's do. A
// panicking, NaN or hung reward never stops training: the Evaluator scores
// it 0 and the step's metrics count it under rewards/<name>/failures.
// Train checks its context between steps; when it ends, Train writes a
// checkpoint and returns context.Cause(ctx). Any other error also saves the
// last completed step first. A step whose loss or gradient norm is NaN or
// ±Inf is not applied and is counted (metric "nonfinite");
// Config.MaxNonFiniteSteps of them in a row stop training with
// ErrNonFinite, without saving.
//
// NewTrainer registers the two-DotGeneral gradient of internal/vjp in
// GoMLX's process-wide table (as model.Load does).
//
// # Concurrency
//
// A Trainer, an sft.Trainer and an LMPolicy are not safe for concurrent
// use; Config, Example and the other plain values are. Rewards are called
// concurrently (see package reward).
//
// # References
//
// The advantages (scale_rewards, multi_objective_aggregation, reward
// weights), the loss types (dapo — the default —, grpo, bnpo, dr_grpo,
// cispo, sapo, luspo, vespo), GSPO's sequence-level ratio, the clipping
// with Epsilon, EpsilonHigh and Delta, the entropy and off-policy masks,
// the k3 KL estimator (optionally bias-corrected), the entropy bonus, the
// generation batches (StepsPerGeneration / GenerationBatchSize: one batch
// generated and scored as a whole, shuffled, then fed to the optimizer one
// micro-batch at a time with _prepare_inputs' indexing and NumIterations)
// and the metric names follow TRL 1.16.0's GRPOTrainer; tests match the
// numbers TRL's own code computes (testdata/trl-1.16, written by
// internal/trlref: the loss of every variant, one optimizer step end to
// end, the logged metric names), and the older transcribed references
// where TRL has not changed since (../shared/golden/trl-1.10, TRL v0.21.0's
// ../shared/golden/llama-tiny). loss/LOSSES.md says when to
// pick which loss type, with the paper each comes from. Dynamic sampling
// (Config.DynamicSampling) is DAPO's (Yu et al., 2025); TRL does not have it.
// Token-level credit (Trainer.SetTokenCredit, TokenCredit) is process
// supervision at the token level (DeepSeekMath, Shao et al. 2024); TRL
// does not have it either.
package grpo
