package grpo_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/loss"
	"github.com/grpokit/grpokit/reward"
)

// trainWithCredit trains a fresh fake policy for cfg.MaxSteps steps on the
// "say" task with the named rewards and, when c is not nil, token credit;
// it returns the policy's table and the metrics of every step.
func trainWithCredit(t *testing.T, cfg grpo.Config, c *grpo.TokenCredit, progress io.Writer, rewards ...reward.Named) ([]float32, []grpo.Metrics) {
	t.Helper()
	p := newPolicy(t)
	tr, err := grpo.NewTrainer(p, cfg, rewards...)
	if err != nil {
		t.Fatal(err)
	}
	if c != nil {
		if err := tr.SetTokenCredit(*c); err != nil {
			t.Fatal(err)
		}
	}
	tr.Progress = io.Discard
	if progress != nil {
		tr.Logger = textLogger(progress)
	}
	var ms []grpo.Metrics
	tr.OnStep = func(m grpo.Metrics) { ms = append(ms, m) }
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	return p.Table(), ms
}

// TestTokenCreditNeutral checks that token credit that credits nothing
// (every token unscored, or every token scored alike: the group ties) goes
// through the [B, C] advantages and leaves training bit for bit as without
// it, KL term included.
func TestTokenCreditNeutral(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 4
	cfg.Beta = 0.04
	r := reward.Named{Name: "exact", Weight: 1, Scorer: exact}
	want, wantMs := trainWithCredit(t, cfg, nil, nil, r)
	for name, v := range map[string]float64{"unscored": math.NaN(), "constant": 0.5} {
		t.Run(name, func(t *testing.T) {
			cfg.OutputDir = t.TempDir()
			c := &grpo.TokenCredit{Name: "x", Weight: 3, Scorer: grpo.TokenScorerFunc(func(_ reward.Sample, ids []int32) ([]float64, error) {
				out := make([]float64, len(ids))
				for i := range out {
					out[i] = v
				}
				return out, nil
			})}
			got, ms := trainWithCredit(t, cfg, c, nil, r)
			if !slices.Equal(got, want) {
				t.Error("weights differ from training without token credit")
			}
			for i := range ms {
				if ms[i]["loss"] != wantMs[i]["loss"] {
					t.Errorf("step %d: loss %g, want %g", i+1, ms[i]["loss"], wantMs[i]["loss"])
				}
			}
			if z := ms[0]["token_credit/x/frac_group_zero_std"]; z != 1 {
				t.Errorf("frac_group_zero_std %g, want 1", z)
			}
		})
	}
}

// TestTokenCreditLearns trains with a sequence reward that always ties (no
// signal at all) and token credit on the first token alone (1 when it is
// the answer): the policy learns the task from the token credit, and does
// not without it; only the run without warns that there is no signal.
func TestTokenCreditLearns(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 60
	flat := reward.Named{Name: "flat", Weight: 1, Scorer: reward.Func(func(_, _, _ string) float64 { return 1 })}
	logged := reward.Named{Name: "exact", Weight: 0, Scorer: exact}
	p := newPolicy(t)
	first := grpo.TokenScorerFunc(func(s reward.Sample, ids []int32) ([]float64, error) {
		out := make([]float64, len(ids))
		for i := range out {
			out[i] = math.NaN()
		}
		out[0] = 0
		if strings.TrimSpace(p.Decode(ids[:1])) == s.Answer {
			out[0] = 1
		}
		return out, nil
	})
	rate := func(ms []grpo.Metrics) float64 {
		var s float64
		for _, m := range ms[len(ms)-5:] {
			s += m["rewards/exact/mean"]
		}
		return s / 5
	}
	var warnWithout, warnWith strings.Builder
	_, without := trainWithCredit(t, cfg, nil, &warnWithout, flat, logged)
	cfg.OutputDir = t.TempDir()
	_, with := trainWithCredit(t, cfg, &grpo.TokenCredit{Name: "first", Weight: 1, Scorer: first}, &warnWith, flat, logged)
	// Every group's sequence rewards tie in both runs; only the run without
	// token credit has no signal and should say so.
	if !strings.Contains(warnWithout.String(), "no learning signal") || strings.Contains(warnWith.String(), "no learning signal") {
		t.Errorf("zero-std warnings: without token credit %q, with %q", warnWithout.String(), warnWith.String())
	}
	if with[0]["token_credit/first/frac_group_zero_std"] >= 1 {
		t.Errorf("token credit's groups all tie at step 1: %v", with[0])
	}
	t.Logf("correct first word, last 5 steps: %.3f without token credit, %.3f with", rate(without), rate(with))
	if rate(with) < 0.8 {
		t.Errorf("with token credit the first word is right %.3f of the time; want ≥ 0.8", rate(with))
	}
	if rate(without) > 0.5 {
		t.Errorf("without token credit (no signal) the first word is right %.3f of the time; want chance", rate(without))
	}
}

// TestTokenCreditErrors checks SetTokenCredit's validation and a scorer
// that returns the wrong number of rewards.
func TestTokenCreditErrors(t *testing.T) {
	cfg := smallConfig(t)
	tr, err := grpo.NewTrainer(newPolicy(t), cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.SetTokenCredit(grpo.TokenCredit{Weight: 1}); err == nil || !strings.Contains(err.Error(), "nil Scorer") {
		t.Errorf("nil scorer: err = %v", err)
	}
	short := grpo.TokenScorerFunc(func(_ reward.Sample, ids []int32) ([]float64, error) { return make([]float64, len(ids)-1), nil })
	if err := tr.SetTokenCredit(grpo.TokenCredit{Weight: math.Inf(1), Scorer: short}); err == nil || !strings.Contains(err.Error(), "not finite") {
		t.Errorf("infinite weight: err = %v", err)
	}
	if err := tr.SetTokenCredit(grpo.TokenCredit{Name: "short", Weight: 1, Scorer: short}); err != nil {
		t.Fatal(err)
	}
	err = tr.Train(context.Background(), sayDataset())
	if err == nil || !strings.Contains(err.Error(), `token credit "short"`) || !strings.Contains(err.Error(), "rewards for") {
		t.Errorf("short scorer: err = %v", err)
	}
}

// Two completions of one prompt: the first scored 1 and 0 on its first and
// last token (its middle token unscored), the second 1 and 1. The group's
// scored rewards have mean 0.75; with scale none the credit is r − 0.75.
func ExampleTokenAdvantages() {
	nan := math.NaN()
	adv, _, err := loss.TokenAdvantages([][]float64{{1, nan, 0}, {1, 1}}, 1, 2, loss.ScaleNone)
	if err != nil {
		panic(err)
	}
	fmt.Println(adv)
	// Output: [[0.25 0 -0.75] [0.25 0.25]]
}
