package grpo_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builder
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/grpo/grpotest"
	"github.com/grpokit/grpokit/reward"
)

// poisonPolicy is the fake policy whose logits get a scalar added: 0
// normally, NaN when a test poisons a step.
type poisonPolicy struct {
	*grpotest.Policy
	poison *mlctx.Variable
}

func newPoisonPolicy(t *testing.T) *poisonPolicy {
	p := newPolicy(t)
	v := p.Context().InAbsPath("/poison").VariableWithValue("x", float32(0)).SetTrainable(false)
	return &poisonPolicy{p, v}
}

func (p *poisonPolicy) Logits(ctx *mlctx.Context, in grpo.LogitsInputs) *Node {
	l := p.Policy.Logits(ctx, in)
	return Add(l, p.poison.ValueGraph(l.Graph()))
}

func (p *poisonPolicy) set(t *testing.T, x float32) {
	if err := p.poison.SetValue(tensors.FromScalar(x)); err != nil {
		t.Fatal(err)
	}
}

// snapshot copies every variable of ctx but the poison, the learning rate
// and the gradient accumulators (zero between steps).
func snapshot(ctx *mlctx.Context) map[string][]float32 {
	out := map[string][]float32{}
	for v := range ctx.IterVariables() {
		name := v.ScopeAndName()
		if strings.Contains(name, "poison") || strings.Contains(name, "acc_grads") || strings.Contains(name, "learning_rate") {
			continue
		}
		val, err := v.Value()
		if err != nil {
			continue
		}
		var flat []float32
		_ = val.ConstFlatData(func(f any) {
			switch x := f.(type) {
			case []float32:
				flat = slices.Clone(x)
			case []float64:
				for _, y := range x {
					flat = append(flat, float32(y))
				}
			case []int64:
				for _, y := range x {
					flat = append(flat, float32(y))
				}
			}
		})
		out[name] = flat
	}
	return out
}

// TestNonFiniteStepSkipped (finding 2): steps whose loss is NaN change
// neither the weights nor AdamW's moments and step counter, are written to
// metrics.jsonl with "loss": null and "nonfinite": 1, are logged with their
// rewards, and training goes on.
func TestNonFiniteStepSkipped(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.MaxNonFiniteSteps = 6, 3
	p := newPoisonPolicy(t)
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	tr.Progress, tr.Logger = io.Discard, textLogger(&log)
	var before, after map[string][]float32
	tr.OnStep = func(m grpo.Metrics) {
		switch int(m["step"]) {
		case 2:
			before = snapshot(p.Context())
			p.set(t, float32(math.NaN())) // steps 3 and 4
		case 4:
			after = snapshot(p.Context())
			p.set(t, 0)
		}
	}
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	if len(before) < 3 {
		t.Fatalf("snapshot has %d variables, want the table and AdamW's state", len(before))
	}
	for name, want := range before {
		if got := after[name]; !slices.Equal(got, want) {
			t.Errorf("variable %s changed during the non-finite steps", name)
		}
	}
	ms, err := grpo.ReadMetrics(filepath.Join(cfg.OutputDir, checkpoint.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 6 {
		t.Fatalf("%d metric lines, want 6", len(ms))
	}
	for i, m := range ms {
		bad := i == 2 || i == 3
		if (m["nonfinite"] == 1) != bad || math.IsNaN(m["loss"]) != bad {
			t.Errorf("step %d: nonfinite %v, loss %v", i+1, m["nonfinite"], m["loss"])
		}
	}
	if steps, _ := grpo.Series(ms, "loss"); len(steps) != 4 {
		t.Errorf("Series(loss) has steps %v, want the 4 finite ones", steps)
	}
	data, _ := os.ReadFile(filepath.Join(cfg.OutputDir, checkpoint.MetricsFile))
	if !strings.Contains(string(data), `"loss":null`) {
		t.Errorf("metrics.jsonl lacks \"loss\":null")
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "step=3 loss=NaN") ||
		!strings.Contains(log.String(), "in_a_row=1") || !strings.Contains(log.String(), "exact mean") {
		t.Errorf("log lacks the skipped step with its rewards:\n%s", log.String())
	}
	for _, v := range p.Table() {
		if math.IsNaN(float64(v)) {
			t.Fatal("NaN weight after training")
		}
	}
}

// TestNonFiniteStops (finding 2): MaxNonFiniteSteps non-finite steps in a
// row stop training with ErrNonFinite; no checkpoint is written for them
// and every checkpoint holds finite weights.
func TestNonFiniteStops(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.SaveSteps, cfg.MaxNonFiniteSteps = 10, 1, 2
	p := newPoisonPolicy(t)
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	tr.Progress = &strings.Builder{}
	tr.OnStep = func(m grpo.Metrics) {
		if m["step"] == 2 {
			p.set(t, float32(math.Inf(1)))
		}
	}
	err = tr.Train(context.Background(), sayDataset())
	if !errors.Is(err, grpo.ErrNonFinite) || tr.Step() != 4 {
		t.Fatalf("Train = %v at step %d; want ErrNonFinite at step 4", err, tr.Step())
	}
	path, err := grpo.LatestCheckpoint(cfg.OutputDir)
	if err != nil || filepath.Base(path) != "checkpoint-2" {
		t.Errorf("LatestCheckpoint = %q, %v; want checkpoint-2", path, err)
	}
	for _, v := range p.Table() {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatal("non-finite weight")
		}
	}
}

// TestRewardOverflow (finding 2): a reward returning math.MaxFloat64 (finite,
// but a group's sum overflows) counts as a reward failure; the loss stays
// finite and training goes on.
func TestRewardOverflow(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 4
	huge := reward.Func(func(_, c, _ string) float64 {
		if strings.Contains(c, "cat") || strings.Contains(c, "dog") {
			return math.MaxFloat64
		}
		return 1
	})
	p := newPolicy(t)
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "huge", Weight: 1, Scorer: huge})
	if err != nil {
		t.Fatal(err)
	}
	var failures float64
	tr.OnStep = func(m grpo.Metrics) {
		failures += m["rewards/huge/failures"]
		if !(math.Abs(m["loss"]) < math.Inf(1)) || m["nonfinite"] != 0 {
			t.Errorf("step %v: loss %v, nonfinite %v", m["step"], m["loss"], m["nonfinite"])
		}
	}
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	if failures == 0 {
		t.Error("no reward failures counted for math.MaxFloat64")
	}
	for _, v := range p.Table() {
		if math.IsNaN(float64(v)) {
			t.Fatal("NaN weight")
		}
	}
}

// TestErrorSavesCheckpoint (finding 6): an error other than cancellation (a
// Dataset that fails part-way) saves the last completed step before Train
// returns it.
func TestErrorSavesCheckpoint(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.ShuffleDataset, cfg.SaveSteps = 6, false, 0
	tr, _ := newTrainer(t, cfg)
	err := tr.Train(context.Background(), stepFailing{sayDataset(), 3, cfg.PromptsPerStep()})
	if err == nil || !strings.Contains(err.Error(), "disk error") {
		t.Fatalf("Train = %v, want the dataset's error", err)
	}
	path, lerr := grpo.LatestCheckpoint(cfg.OutputDir)
	if lerr != nil || filepath.Base(path) != "checkpoint-2" {
		t.Errorf("LatestCheckpoint = %q, %v; want checkpoint-2 (the last completed step)", path, lerr)
	}
}

// stepFailing fails on the prompts of optimizer step failStep (1-based).
type stepFailing struct {
	dataset.SliceDataset
	failStep, perStep int
}

func (d stepFailing) Len() int { return 100 }

func (d stepFailing) Example(i int) (dataset.Example, error) {
	if i >= (d.failStep-1)*d.perStep {
		return dataset.Example{}, fmt.Errorf("disk error at example %d", i)
	}
	return d.SliceDataset.Example(i % len(d.SliceDataset))
}

// TestRewardTimeoutSetting (finding 6): Config.RewardTimeout bounds a hung
// reward's cost per step, instead of the fixed 10 s.
func TestRewardTimeoutSetting(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.RewardTimeout, cfg.RewardWorkers = 1, 0.05, 8
	release := make(chan struct{})
	defer close(release)
	hang := reward.Func(func(_, _, _ string) float64 { <-release; return 1 })
	p := newPolicy(t)
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "hang", Weight: 1, Scorer: hang})
	if err != nil {
		t.Fatal(err)
	}
	var timeouts float64
	tr.OnStep = func(m grpo.Metrics) { timeouts = m["rewards/hang/failures"] }
	start := time.Now()
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second || timeouts != float64(cfg.BatchSize) {
		t.Errorf("one step with a hung reward took %s with %v failures; want ≪ 10 s and %d", took, timeouts, cfg.BatchSize)
	}
	cfg.RewardTimeout = -1
	if err := cfg.Validate(); err == nil {
		t.Error("RewardTimeout -1 accepted")
	}
}

// TestSaveRefusesNonFiniteWeights: whatever happened before, Save never
// writes a checkpoint whose weights hold NaN or ±Inf.
func TestSaveRefusesNonFiniteWeights(t *testing.T) {
	cfg := smallConfig(t)
	p := newPolicy(t)
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	table := p.TrainableVariables()[0]
	bad := p.Table()
	bad[7] = float32(math.NaN())
	if err := table.SetValue(tensors.FromFlatDataAndDimensions(bad, table.Shape().Dimensions...)); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Save(cfg.OutputDir); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("Save = %v, want a refusal naming NaN", err)
	}
	if names := dirNames(t, cfg.OutputDir); len(names) != 0 {
		t.Errorf("Save left %v", names)
	}
}
