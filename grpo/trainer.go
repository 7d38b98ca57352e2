package grpo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/internal/vjp"
	"github.com/grpokit/grpokit/memplan"
	"github.com/grpokit/grpokit/model"
	"github.com/grpokit/grpokit/reward"
)

// Trainer runs GRPO on a Policy. Create it with NewTrainer, optionally
// Resume a checkpoint, then call Train (a Dataset) or TrainEnv (an Env). A
// Trainer is not safe for concurrent use.
type Trainer struct {
	// Progress receives what a user watches a run by: the memory plan
	// before step 0, a progress line every Config.LoggingSteps steps (the
	// mean of those steps' metrics), the evaluation lines and, with
	// Config.LogCompletions, a table of sample completions at each of
	// those steps; nil means os.Stderr. Set it before training.
	Progress io.Writer
	// Logger receives the trainer's warnings and notes, each a record with
	// attributes (a step without learning signal, a step not applied for a
	// NaN loss, rows no reward applied to, files of an earlier run moved
	// aside, the memory limit); nil means slog.Default(). Set it before
	// training.
	Logger *slog.Logger
	// ZeroStdWarnSteps is the number of consecutive steps in which every
	// group's rewards were all equal (frac_reward_zero_std = 1) after which
	// the trainer warns on Logger: such steps carry no learning signal
	// (every advantage is 0). The warning repeats every as many steps while
	// it lasts. 0 means 10; a negative value never warns.
	ZeroStdWarnSteps int
	// WarmStarted says the policy comes out of a supervised warm start
	// (sft.Trainer; the grpokit command sets it after its sft section).
	// Such a run's sampled reward is watched: once the mean reward of the
	// last CollapseWarnSteps steps falls below CollapseFraction times the
	// mean reward of the run's first CollapseWarnSteps steps (the first
	// window mean above 0), the trainer warns on Logger, once. A run
	// resumed from a checkpoint is not watched (its first steps are not
	// the warm start's). Set it before training.
	WarmStarted bool
	// CollapseWarnSteps is the window, in steps, of the warm-start
	// collapse warning (see WarmStarted); 0 means 5; a negative value
	// never warns.
	CollapseWarnSteps int
	// CollapseFraction is the fraction of the first steps' mean reward
	// below which the last steps' mean counts as a collapse (see
	// WarmStarted); 0 means 0.5.
	CollapseFraction float64
	// OnStep, when set, is called after every optimizer step with that
	// step's metrics (the object written to metrics.jsonl).
	OnStep func(m Metrics)
	// EvalDataset is evaluated every Config.EvalSteps steps when
	// Config.EvalStrategy is "steps" (see Trainer.Evaluate); set it before
	// training. HF: eval_dataset.
	EvalDataset dataset.Dataset
	// OnEval, when set, is called with each evaluation's metrics.
	OnEval func(m Metrics)
	// Memory is the memory budget the run's memory plan is checked
	// against before step 0 (for a Policy that is a MemoryPlanner); nil
	// means memplan.Available(). A Budget with Off set prints the plan
	// without stopping. Programs that honour GRPOKIT_MEMORY_LIMIT pass
	// memplan.BudgetFromEnv().
	Memory *memplan.Budget
	// GCLimit, when set, gives Go's garbage collector a memory limit for
	// the run (memplan.LimitGC: the plan's peak, raised if the run needs
	// more) and restores the previous limit when the run ends. The limit
	// is process-wide, so it is off by default; the grpokit command sets
	// it. GOMEMLIMIT or a limit the program set wins.
	GCLimit bool
	// OutputLock is Config.OutputDir's lock when the program took it
	// (checkpoint.Lock) before writing there itself; the program releases
	// it. nil: Train and TrainEnv take the lock for the run and release it
	// when they return.
	OutputLock *checkpoint.OutputLock
	// AdoptRun lets Resume continue, in Config.OutputDir, a checkpoint of
	// another run than the one whose checkpoints the folder holds (a
	// checkpoint copied in from elsewhere). Without it Resume refuses: the
	// two runs' checkpoints and metrics would mix.
	AdoptRun bool

	cfg     Config
	policy  Policy
	rewards []reward.Named
	eval    *reward.Evaluator
	// constraint is the policy's sampling constraint (see Constrained);
	// nil for none.
	constraint model.Constraint
	// tokenCredit adds token-level advantages (SetTokenCredit); nil for none.
	tokenCredit *TokenCredit
	// tools makes completions tool-calling trajectories (SetTools); nil
	// for none.
	tools *toolRun

	// Training graphs by mode: one micro-batch per step (fused), the first
	// micro-batches of a step (accumulate), its last one (final).
	fusedExec, accumExec, finalExec *mlctx.Exec
	oldExec, refExec                *mlctx.Exec
	// refCtx holds the reference model's variables (the policy's own
	// context with a LoRA adapter); nil with Beta 0. syncer updates them
	// for Config.SyncRefModel (nil without it).
	refCtx *mlctx.Context
	syncer ReferenceSyncer
	// update takes the AdamW step from the training graphs' gradients
	// (update.go).
	update *adamUpdate

	// injectEntropyMask, when set (tests only), gives the entropy mask
	// from the training graph's inputs instead of computing it.
	injectEntropyMask func(in []*graph.Node) *graph.Node

	// ownVars are the context's variables when the trainer was made; any
	// other variable (optimizer state) belongs to the trainer.
	ownVars map[*mlctx.Variable]bool

	step      int           // optimizer steps done
	numTokens float64       // prompt + completion tokens seen
	buf       *rolloutBatch // rollouts of the current generation batch
	perm      []int         // dataset order of permEpoch
	permEpoch int
	started   time.Time
	win       logWindow // metrics since the last progress line
	collapse  collapseWatch
	startStep int
	marks     []stepMark     // when the last progress lines' steps ended, for the ETA
	rel       runState       // run id, resume and non-finite bookkeeping (outdir.go, guard.go)
	entropy   entropyControl // adaptive entropy control (UseAdaptiveEntropy)
}

// NewTrainer returns a Trainer for policy with the named rewards (summed
// with their weights into the reward each completion is trained on). It
// validates cfg and registers the fast DotGeneral gradient
// (internal/vjp) for the process.
func NewTrainer(policy Policy, cfg Config, rewards ...reward.Named) (*Trainer, error) {
	if policy == nil {
		return nil, errors.New("grpo: NewTrainer: nil Policy")
	}
	cfg, err := cfg.settled()
	if err != nil {
		return nil, err
	}
	if lp, ok := policy.(*LMPolicy); ok && cfg.GradientCheckpointing && lp.adapter != nil && lp.adapter.Config().Dropout > 0 {
		return nil, errors.New("grpo: NewTrainer: gradient_checkpointing with lora_dropout > 0: the recomputed layers would draw another dropout mask (set lora_dropout 0, or turn gradient_checkpointing off)")
	}
	if len(rewards) == 0 {
		return nil, errors.New("grpo: NewTrainer: no rewards")
	}
	var errs []error
	if err := checkRewardNames(rewards); err != nil {
		errs = append(errs, fmt.Errorf("grpo: NewTrainer: %w", err))
	}
	for i, r := range rewards {
		if r.Scorer == nil {
			errs = append(errs, fmt.Errorf("grpo: NewTrainer: reward %d (%q) has a nil Scorer", i, r.Name))
		}
	}
	if w := cfg.RewardWeights; w != nil && len(w) != len(rewards) {
		errs = append(errs, fmt.Errorf("grpo: NewTrainer: Config.RewardWeights has %d weights for %d rewards", len(w), len(rewards)))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if lp, ok := policy.(*LMPolicy); ok && lp.opts.Frozen {
		return nil, errors.New("grpo: NewTrainer: the policy is frozen (LMPolicyOptions.Frozen): it generates, it does not train")
	}
	trainable := policy.TrainableVariables()
	if len(trainable) == 0 {
		return nil, errors.New("grpo: NewTrainer: the policy has no trainable variables")
	}
	for _, v := range trainable {
		if !v.Trainable {
			errs = append(errs, fmt.Errorf("grpo: NewTrainer: variable %s is listed as trainable but not marked Trainable", v.ScopeAndName()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	vjp.Register()
	t := &Trainer{
		cfg:        cfg,
		policy:     policy,
		rewards:    append([]reward.Named(nil), rewards...),
		constraint: constraintOf(policy),
		ownVars:    map[*mlctx.Variable]bool{},
		permEpoch:  -1,
		rel:        runState{savedStep: -1},
		entropy:    newEntropyControl(cfg),
	}
	for i, w := range cfg.RewardWeights {
		t.rewards[i].Weight = w // TRL's reward_weights replace the Named weights
	}
	t.eval = rewardEvaluator(cfg, t.rewards)
	ctx := policy.Context()
	for v := range ctx.IterVariables() {
		t.ownVars[v] = true
	}
	b := policy.Backend()
	// Enough compiled shapes for every prompt × completion bucket.
	const maxCache = 128
	for _, e := range []struct {
		exec              **mlctx.Exec
		accumulate, apply bool
	}{{&t.fusedExec, false, true}, {&t.accumExec, true, false}, {&t.finalExec, true, true}} {
		// Graphs compile on first use, per shape.
		if *e.exec, err = mlctx.NewExecAny(b, ctx, t.trainGraph(e.accumulate, e.apply)); err != nil {
			return nil, fmt.Errorf("grpo: training graph: %w", err)
		}
		(*e.exec).SetMaxCache(maxCache)
	}
	if t.update, err = newAdamUpdate(b, ctx, cfg, grpoOptimizerScope); err != nil {
		return nil, err
	}
	if t.withOld() {
		if t.oldExec, err = mlctx.NewExecAny(b, ctx, t.logProbsGraph(false)); err != nil {
			return nil, fmt.Errorf("grpo: old log-probs graph: %w", err)
		}
		t.oldExec.SetMaxCache(maxCache)
	}
	if t.withRef() {
		refCtx := ctx
		if rc, ok := policy.(ReferenceContexter); ok {
			if refCtx, err = rc.ReferenceContext(); err != nil {
				return nil, err
			}
		}
		if t.refExec, err = mlctx.NewExecAny(b, refCtx, t.logProbsGraph(true)); err != nil {
			return nil, fmt.Errorf("grpo: reference log-probs graph: %w", err)
		}
		t.refExec.SetMaxCache(maxCache)
		t.refCtx = refCtx
	}
	if cfg.SyncRefModel {
		rs, ok := policy.(ReferenceSyncer)
		switch {
		case t.refCtx == ctx:
			// TRL raises NotImplementedError for a PEFT model likewise.
			return nil, errors.New("grpo: NewTrainer: sync_ref_model with a LoRA adapter (or a policy whose reference model shares its weights) is not supported: " +
				"the reference model is the base model without the adapter, not a copy of its own, so there is nothing to sync; " +
				"train all weights (no adapter) or set sync_ref_model false")
		case !ok:
			return nil, fmt.Errorf("grpo: NewTrainer: sync_ref_model: the policy (%T) cannot update its reference model (it does not implement grpo.ReferenceSyncer)", policy)
		}
		t.syncer = rs
	}
	return t, nil
}

// syncReference applies TR-DPO's reference update after optimizer step
// t.step when it is due (Config.SyncRefModel), as TRL's
// SyncRefModelCallback does at the end of every step whose global_step is
// a multiple of ref_model_sync_steps.
func (t *Trainer) syncReference() error {
	if t.syncer == nil || t.step%t.cfg.RefModelSyncSteps != 0 {
		return nil
	}
	if err := t.syncer.SyncReference(t.cfg.RefModelMixupAlpha); err != nil {
		return fmt.Errorf("grpo: step %d: reference sync: %w", t.step, err)
	}
	return nil
}

// Config returns the trainer's configuration.
func (t *Trainer) Config() Config { return t.cfg }

// Step returns the number of optimizer steps done (restored by Resume).
func (t *Trainer) Step() int { return t.step }

// withOld reports whether old log-probs are computed at generation time
// (see Config.needsOldLogProbs).
func (t *Trainer) withOld() bool { return t.cfg.needsOldLogProbs() }

// withRef reports whether reference log-probs are computed.
func (t *Trainer) withRef() bool { return t.cfg.Beta != 0 }

// Train runs GRPO on data for Config.TrainSteps(data.Len()) optimizer
// steps: MaxSteps, or NumTrainEpochs passes when MaxSteps is 0. Between steps it checks ctx;
// when ctx ends it writes a checkpoint (if OutputDir is set) and returns
// context.Cause(ctx). It also writes a checkpoint every SaveSteps steps and
// at the end.
func (t *Trainer) Train(ctx context.Context, data dataset.Dataset) error {
	if data == nil || data.Len() < 1 {
		return errors.New("grpo: Train: empty dataset")
	}
	return t.run(ctx, &datasetSource{data: data}, t.cfg.TrainSteps(data.Len()))
}

// TrainEnv runs GRPO on the episodes of env (see Env) for
// Config.MaxSteps optimizer steps, which must be > 0. Cancellation and
// checkpoints are as for Train.
func (t *Trainer) TrainEnv(ctx context.Context, env Env) error {
	if env == nil {
		return errors.New("grpo: TrainEnv: nil Env")
	}
	if t.cfg.MaxSteps < 1 {
		return errors.New("grpo: TrainEnv: Config.MaxSteps must be > 0 for an Env")
	}
	if t.cfg.DynamicSampling {
		return errors.New("grpo: TrainEnv: Config.DynamicSampling works with Train (a dataset.Dataset) only")
	}
	if t.tools != nil {
		return errors.New("grpo: TrainEnv: tools (SetTools) work with Train; a game whose moves call tools gives them to the model through its Env's prompts")
	}
	if !t.cfg.stepsInOneGeneration() {
		return fmt.Errorf("grpo: TrainEnv: Config.StepsPerGeneration (%d) must be a multiple of GradientAccumulationSteps (%d) for an Env (an episode's later turns make the steps' sizes vary)",
			t.cfg.EffectiveStepsPerGeneration(), t.cfg.GradientAccumulationSteps)
	}
	return t.run(ctx, &envSource{env: env}, t.cfg.MaxSteps)
}

// run is the training loop shared by Train and TrainEnv.
func (t *Trainer) run(ctx context.Context, src source, total int) error {
	if err := t.checkEval(); err != nil {
		return err
	}
	memLimit, err := t.planMemory(src)
	if err != nil {
		return err
	}
	defer memLimit.Restore()
	if t.cfg.OutputDir != "" {
		release, err := t.lockOutputDir()
		if err != nil {
			return err
		}
		defer release()
	}
	if err := t.prepareOutputDir(); err != nil {
		return err
	}
	out, err := openOutputs(t.cfg, t.step, t.logger())
	if err != nil {
		return err
	}
	defer out.close()
	t.started, t.startStep, t.marks = time.Now(), t.step, nil
	for t.step < total {
		if ctx.Err() != nil {
			return t.stop(ctx)
		}
		m, rows, err := t.trainStep(ctx, src, total)
		if err != nil {
			if ctx.Err() != nil {
				return t.stop(ctx)
			}
			return t.failed(err)
		}
		if err := out.write(m, rows, t.cfg.LogCompletions); err != nil {
			return t.failed(err)
		}
		t.logStep(m, total)
		memLimit.Report(t.logger())
		if t.OnStep != nil {
			t.OnStep(m)
		}
		if err := t.evalDue(ctx, out); err != nil {
			if ctx.Err() != nil {
				return t.stop(ctx)
			}
			return t.failed(err)
		}
		if err := t.nonFiniteStop(); err != nil {
			return err
		}
		if t.saveDue() {
			if _, err := t.Save(t.cfg.OutputDir); err != nil {
				return err
			}
		}
	}
	if t.cfg.OutputDir != "" && t.rel.savedStep != t.step {
		if _, err := t.Save(t.cfg.OutputDir); err != nil {
			return err
		}
	}
	return nil
}

// stop saves a checkpoint after cancellation and returns the cause.
func (t *Trainer) stop(ctx context.Context) error {
	cause := context.Cause(ctx)
	if t.cfg.OutputDir != "" && t.rel.savedStep != t.step {
		if _, err := t.Save(t.cfg.OutputDir); err != nil {
			return errors.Join(cause, err)
		}
	}
	return cause
}

// trainStep takes one optimizer step: its micro-batches are slices of
// generation batches (see stepSchedule), each generated on first use and
// then reused for the rest of its StepsPerGeneration × NumIterations
// micro-batches.
func (t *Trainer) trainStep(ctx context.Context, src source, total int) (Metrics, []*row, error) {
	start := time.Now()
	var fresh []*row
	var micro []*microBatch
	var used []usedBatch // generation batches of this step, each once
	var genTime time.Duration
	spg := t.cfg.EffectiveStepsPerGeneration()
	for _, ref := range t.cfg.stepSchedule(t.step) {
		made := false
		if t.buf == nil || t.buf.Index != ref.Batch {
			genStart := time.Now()
			restore := phase(ctx, "generate")
			buf, err := t.makeRollouts(ctx, src, ref.Batch)
			restore()
			if err != nil {
				return nil, nil, err
			}
			genTime += time.Since(genStart)
			t.buf, made = buf, true
			fresh = append(fresh, buf.Rows...)
			t.numTokens += buf.Metrics["_step_tokens"]
		}
		if len(used) == 0 || used[len(used)-1].batch != t.buf {
			used = append(used, usedBatch{t.buf, made})
		}
		micro = append(micro, t.buf.slice(ref.Slice, spg)...)
	}
	lr := t.cfg.LearningRateAt(t.step, total)
	if err := t.setLearningRate(lr); err != nil {
		return nil, nil, err
	}
	trainStart := time.Now()
	defer phase(ctx, "train")()
	var loss float64
	stats := newStepStats()
	var gradNorm float64
	applied := true
	for j, mb := range micro {
		exec := t.accumExec
		switch {
		case len(micro) == 1:
			exec = t.fusedExec
		case j == len(micro)-1:
			exec = t.finalExec
		}
		in := mb.inputs(t.withOld(), t.withRef())
		if t.cfg.UseAdaptiveEntropy {
			// The graph's bonus has coefficient 1: this step's is in its scale.
			in[microEntScale] = tensors.FromScalar(mb.EntScale * float32(t.entropy.applied(t.cfg)))
		}
		outs, err := exec.Exec(mb.withGroup(mb.withAllowed(in, t.constraint))...)
		if err != nil {
			return nil, nil, fmt.Errorf("grpo: step %d: %w", t.step+1, err)
		}
		loss += float64(tensors.ToScalar[float32](outs[0]))
		stats.add(tensors.MustCopyFlatData[float32](outs[1]))
		if len(outs) > 2 && t.update.clipOnHost {
			norm, ok, err := t.update.clipAndApply(tensors.ToScalar[float32](outs[0]), outs[2:], t.cfg.MaxGradNorm)
			if err != nil {
				return nil, nil, fmt.Errorf("grpo: step %d: %w", t.step+1, err)
			}
			gradNorm, applied = float64(norm), ok
			continue
		}
		if len(outs) > 2 {
			gradNorm = float64(tensors.ToScalar[float32](outs[2]))
		}
		if len(outs) > 3 {
			applied = tensors.ToScalar[bool](outs[3])
			if !applied {
				dropGradients(outs[4:])
			} else if err := t.update.apply(outs[4:]); err != nil {
				return nil, nil, fmt.Errorf("grpo: step %d: %w", t.step+1, err)
			}
		}
	}
	t.step++
	if err := t.syncReference(); err != nil {
		return nil, nil, err
	}
	stepTime := time.Since(start)
	if t.cfg.UseAdaptiveEntropy && applied {
		t.entropy.update(t.cfg, stats.bonusEntropy())
	}

	m, internal := generationMetrics(used)
	m["step"] = float64(t.step)
	if ds, ok := src.(interface{ size() int }); ok {
		m["epoch"] = t.cfg.EpochAt(t.step, ds.size()) // HF's epoch
	}
	m["loss"] = loss
	m["learning_rate"] = lr
	m["grad_norm"] = gradNorm
	stats.metrics(m, t.cfg, t.entropy.coef)
	m["num_tokens"] = t.numTokens
	m["step_time"] = stepTime.Seconds()
	m["generate_time"] = genTime.Seconds()
	m["train_time"] = time.Since(trainStart).Seconds()
	for _, k := range []string{"timing/generate", "timing/reward", "timing/logprobs"} {
		m[k] = internal["_"+k] // 0 when the step reused its rollouts
	}
	m["tokens_per_second"] = internal["_step_tokens"] / stepTime.Seconds()
	t.guardStep(m, applied)
	return m, fresh, nil
}

// setLearningRate writes lr into the optimizer's learning-rate variable.
func (t *Trainer) setLearningRate(lr float64) error {
	v := optimizers.LearningRateVar(t.policy.Context(), dtypes.Float32, t.cfg.LearningRate)
	if err := v.SetValue(tensors.FromScalar(float32(lr))); err != nil {
		return fmt.Errorf("grpo: set learning rate: %w", err)
	}
	return nil
}

// seed mixes the config seed with a rollout batch and a turn into a
// sampler seed (SplitMix64 finalizer), so every step's sampling is fixed by
// Config.Seed alone.
func (t *Trainer) seed(batch, turn int) uint64 {
	x := uint64(t.cfg.Seed) ^ uint64(batch+1)*0x9e3779b97f4a7c15 ^ uint64(turn+1)*0xbf58476d1ce4e5b9
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// exampleIndex returns the dataset index of the n-th example drawn.
func (t *Trainer) exampleIndex(n, size int) int {
	epoch, pos := n/size, n%size
	if !t.cfg.ShuffleDataset {
		return pos
	}
	if epoch != t.permEpoch {
		r := rand.New(rand.NewPCG(uint64(t.cfg.Seed), uint64(epoch)))
		t.perm, t.permEpoch = r.Perm(size), epoch
	}
	return t.perm[pos]
}

// lockOutputDir makes sure the run holds OutputDir's lock: the program's
// (OutputLock), or one taken now and released when the run ends.
func (t *Trainer) lockOutputDir() (release func(), err error) {
	if l := t.OutputLock; l != nil {
		if filepath.Clean(l.Dir()) != filepath.Clean(t.cfg.OutputDir) {
			return nil, fmt.Errorf("grpo: Trainer.OutputLock holds %s, not OutputDir %s", l.Dir(), t.cfg.OutputDir)
		}
		return func() {}, nil
	}
	l, err := checkpoint.Lock(t.cfg.OutputDir)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}
