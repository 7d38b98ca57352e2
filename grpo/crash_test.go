// SIGKILL, and the exit status it leaves, are Unix's: on Windows a killed
// process only exits with a code, which this test cannot tell from a crash.

//go:build unix

package grpo_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/interrupt"
	"github.com/grpokit/grpokit/reward"
)

var crashKills = flag.Int("crash.kills", 6, "TestCrashResume: how many kills and signals (CI runs 6; try 50)")

// Environment of a TestCrashChild process.
const (
	crashDirEnv   = "GRPOKIT_CRASH_DIR"   // output folder; unset: not a child
	crashStageEnv = "GRPOKIT_CRASH_STAGE" // "stage:n": SIGKILL itself at the n-th checkpoint stage
	crashAtEnv    = "GRPOKIT_CRASH_AT"    // "f:calls:step:sig": signal itself at a random moment, see crashAt
)

// crashAt arms a SIGKILL at a random moment of the child's run, timed from
// the run's own progress rather than from the parent's clock (a run takes
// tens of milliseconds, less than a process start on a quiet machine, so
// a kill timed from outside often came after the run had finished). The
// uninterrupted run made calls reward calls in all; from the step it
// resumed at, the child estimates the calls left, arms the kill at the
// reward call a fraction f of the way through them, and fires it after a
// delay of up to two steps (step is one step's duration), so it lands in
// any phase of a step — generation, update, checkpoint write — not only
// inside a reward.
//
// sig is the signal: SIGKILL, or SIGTERM and SIGINT, which the child
// catches as the command does (internal/interrupt): it stops, saves the
// last completed step and exits with 128 + the signal's number.
func crashAt(spec string, startStep, maxSteps int) reward.Func {
	var f float64
	var calls int64
	var step time.Duration
	var sig int
	if _, err := fmt.Sscanf(spec, "%g:%d:%d:%d", &f, &calls, &step, &sig); err != nil {
		panic(fmt.Sprintf("%s=%q: %v", crashAtEnv, spec, err))
	}
	left := float64(calls) * float64(maxSteps-startStep) / float64(maxSteps)
	at := 1 + int64(f*0.8*left)
	delay := time.Duration(math.Mod(f*1e6, 1) * float64(2*step))
	var n atomic.Int64
	return func(p, c, a string) float64 {
		if n.Add(1) == at {
			go func() {
				time.Sleep(delay)
				_ = syscall.Kill(os.Getpid(), syscall.Signal(sig))
			}()
		}
		return exact(p, c, a)
	}
}

// crashConfig is a run with everything a checkpoint must carry (AdamW,
// warmup and decay, accumulation, rollouts shared by NumIterations steps,
// KL against a reference that sync_ref_model moves every 4 steps) and a
// checkpoint every 3 steps, long enough to be killed mid-way.
func crashConfig(dir string) grpo.Config {
	cfg := grpo.DefaultConfig()
	cfg.NumGenerations, cfg.BatchSize, cfg.GradientAccumulationSteps = 4, 4, 2
	cfg.MaxCompletionLength, cfg.MaxPromptLength = 3, 8
	cfg.LearningRate, cfg.WarmupSteps = 0.1, 3
	cfg.MaxSteps, cfg.NumIterations, cfg.Beta = 30, 2, 0.04
	cfg.SyncRefModel, cfg.RefModelSyncSteps = true, 4
	cfg.LoggingSteps, cfg.SaveSteps, cfg.SaveTotalLimit = 0, 3, 2
	cfg.OutputDir = dir
	return cfg
}

// TestCrashChild is the training process TestCrashResume starts and kills;
// it does nothing in a normal test run. It resumes from the newest
// checkpoint when there is one, saves that step again at once (the re-save
// path a finished or cancelled run takes), trains to the end and writes
// the final weights to final.txt.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("only run by TestCrashResume")
	}
	if s := os.Getenv(crashStageEnv); s != "" {
		stage, nth, _ := strings.Cut(s, ":")
		n, _ := strconv.Atoi(nth)
		grpo.SetSaveHook(func(st string) {
			if st == stage {
				if n--; n == 0 {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
					time.Sleep(time.Minute)
				}
			}
		})
	}
	cfg := crashConfig(dir)
	path, err := grpo.LatestCheckpoint(dir)
	startStep := 0
	if err == nil {
		startStep, _ = strconv.Atoi(strings.TrimPrefix(filepath.Base(path), "checkpoint-"))
	}
	var scorer reward.Scorer = exact
	if s := os.Getenv(crashAtEnv); s != "" {
		scorer = crashAt(s, startStep, cfg.MaxSteps)
	}
	p := newPolicy(t)
	tr, terr := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: scorer})
	if terr != nil {
		t.Fatal(terr)
	}
	switch {
	case errors.Is(err, checkpoint.ErrNoCheckpoint):
	case err != nil:
		t.Fatal(err)
	default:
		if err := tr.Resume(path); err != nil {
			t.Fatal(err)
		}
		if _, err := tr.Save(dir); err != nil {
			t.Fatal(err)
		}
	}
	ctx, stop := interrupt.Context(context.Background())
	defer stop()
	if err := tr.Train(ctx, sayDataset()); err != nil {
		if sig, caught := interrupt.Caught(ctx); caught {
			os.Exit(sig.ExitCode()) // stopped and saved, as the command does
		}
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "final.txt"), []byte(fmt.Sprint(p.Table(), p.Reference())), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCrashResume (finding 3, the crash test): a training process is
// stopped -crash.kills times, by SIGTERM, SIGINT (which it catches, saving
// its last completed step, as the command does) or SIGKILL at random
// moments, and by SIGKILL inside each stage of a checkpoint write, and
// restarted each time from its newest checkpoint; the final weights and
// every step's metrics must equal an uninterrupted run's bit for bit, and
// no temporary folder may be left.
func TestCrashResume(t *testing.T) {
	if testing.Short() {
		t.Skip("starts training processes")
	}
	// The uninterrupted run, in this process.
	refDir := t.TempDir()
	p := newPolicy(t)
	var calls atomic.Int64
	counted := reward.Func(func(p, c, a string) float64 { calls.Add(1); return exact(p, c, a) })
	tr, err := grpo.NewTrainer(p, crashConfig(refDir), reward.Named{Name: "exact", Weight: 1, Scorer: counted})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	runTime := time.Since(start)
	stepTime := runTime / time.Duration(crashConfig(refDir).MaxSteps)
	want := fmt.Sprint(p.Table(), p.Reference())
	wantMs, err := grpo.ReadMetrics(filepath.Join(refDir, checkpoint.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	r := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d, %d kills, uninterrupted run %s", seed, *crashKills, runTime.Round(time.Millisecond))
	stages := []string{"files", "manifest", "aside", "renamed"}
	// Random moments take each signal in turn, so that 6 kills see all.
	signals := []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGKILL}
	kills, starts := 0, 0
	byKind := map[string]int{}
	for kills < *crashKills {
		if starts++; starts > 4*(*crashKills)+10 {
			t.Fatalf("%d starts for %d kills", starts, kills)
		}
		cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
		how := "random"
		var sig syscall.Signal
		if kills%2 == 0 { // a SIGKILL, SIGTERM or SIGINT at a random moment
			sig = signals[(kills/2)%len(signals)]
			how = sig.String()
			cmd.Env = append(cmd.Env, fmt.Sprintf("%s=%g:%d:%d:%d", crashAtEnv, r.Float64(), calls.Load(), stepTime, int(sig)))
		} else { // every other kill inside a checkpoint write
			stage, nth := stages[r.IntN(len(stages))], 1+r.IntN(3)
			if stage == "aside" {
				nth = 1 // a child re-saves (moves a copy aside) once, at start
			}
			how = fmt.Sprintf("%s:%d", stage, nth)
			cmd.Env = append(cmd.Env, crashStageEnv+"="+how)
		}
		var out strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		err := cmd.Wait()
		var exit *exec.ExitError
		switch {
		case err == nil:
			// Finished before the kill: start again from scratch.
			t.Logf("start %d (%s): finished before the kill", starts, how)
			if err := os.RemoveAll(dir); err != nil {
				t.Fatal(err)
			}
		case errors.As(err, &exit) && exit.Sys().(syscall.WaitStatus).Signaled():
			kills++
			kind, _, _ := strings.Cut(how, ":")
			byKind[kind]++
		case errors.As(err, &exit) && sig != syscall.SIGKILL && sig != 0 && exit.ExitCode() == 128+int(sig):
			// Caught: the child stopped, saved and exited as the command does.
			kills++
			byKind[how]++
		default:
			t.Fatalf("start %d (%s): %v\n%s", starts, how, err, out.String())
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	got, err := os.ReadFile(filepath.Join(dir, "final.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("final weights after %d kills differ from the uninterrupted run's", kills)
	}
	ms, err := grpo.ReadMetrics(filepath.Join(dir, checkpoint.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != len(wantMs) {
		t.Fatalf("metrics.jsonl has %d lines, want %d", len(ms), len(wantMs))
	}
	for i, m := range ms {
		for _, k := range []string{"step", "loss", "reward", "grad_norm", "kl", "learning_rate", "num_tokens", "entropy", "clip_ratio/region_mean"} {
			if math.Float64bits(m[k]) != math.Float64bits(wantMs[i][k]) {
				t.Errorf("line %d: %s = %v, uninterrupted %v", i+1, k, m[k], wantMs[i][k])
			}
		}
	}
	for _, n := range dirNames(t, dir) {
		if strings.HasPrefix(n, ".") {
			t.Errorf("leftover %s", n)
		}
	}
	t.Logf("%d kills (%v) in %d starts: final weights and %d metric lines equal the uninterrupted run's", kills, byKind, starts, len(ms))
}
