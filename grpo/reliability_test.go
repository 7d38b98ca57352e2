package grpo_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/grpo/grpotest"
	"github.com/grpokit/grpokit/reward"
)

// savingPolicy is the fake policy with a Saver: its table goes to
// policy/weights.txt in every checkpoint, as an adapter would.
type savingPolicy struct{ *grpotest.Policy }

func (p savingPolicy) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "weights.txt"), []byte(fmt.Sprint(p.Table())), 0o644)
}

func newTrainer(t *testing.T, cfg grpo.Config) (*grpo.Trainer, *grpotest.Policy) {
	t.Helper()
	p := newPolicy(t)
	tr, err := grpo.NewTrainer(savingPolicy{p}, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: exact})
	if err != nil {
		t.Fatal(err)
	}
	return tr, p
}

func trainSteps(t *testing.T, cfg grpo.Config) {
	t.Helper()
	tr, _ := newTrainer(t, cfg)
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// rewriteManifest recomputes manifest.json of checkpoint folder dir after a
// test edited its files on purpose, so that what is tested is the check
// behind the manifest (decoding, ranges), not the checksum.
func rewriteManifest(t *testing.T, dir string) {
	t.Helper()
	type entry struct {
		Path   string `json:"path"`
		Size   int64  `json:"size"`
		SHA256 string `json:"sha256"`
	}
	var files []entry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if rel == "manifest.json" {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		files = append(files, entry{filepath.ToSlash(rel), int64(len(data)), hex.EncodeToString(sum[:])})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].Path < files[j].Path })
	data, _ := json.Marshal(map[string]any{"format": 1, "files": files})
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOutputDirInUse (finding 1): a fresh run into a folder holding another
// run is an error that leaves that run alone; with OverwriteOutputDir the
// old run is deleted, not mixed with the new one.
func TestOutputDirInUse(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.SaveSteps = 4, 2
	trainSteps(t, cfg)
	before := dirNames(t, cfg.OutputDir)

	cfg.MaxSteps = 2
	tr, _ := newTrainer(t, cfg)
	err := tr.Train(context.Background(), sayDataset())
	if !errors.Is(err, checkpoint.ErrOutputDirInUse) {
		t.Fatalf("second run into the same folder: err = %v, want ErrOutputDirInUse", err)
	}
	for _, want := range []string{"metrics.jsonl with 4 lines", "checkpoint-4", "OverwriteOutputDir", "Resume"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if after := dirNames(t, cfg.OutputDir); !slices.Equal(before, after) {
		t.Errorf("the refused run changed the folder: %v → %v", before, after)
	}
	if ms, err := grpo.ReadMetrics(filepath.Join(cfg.OutputDir, checkpoint.MetricsFile)); err != nil || len(ms) != 4 {
		t.Errorf("old metrics: %d lines, %v; want 4", len(ms), err)
	}

	cfg.OverwriteOutputDir = true
	trainSteps(t, cfg)
	ms, err := grpo.ReadMetrics(filepath.Join(cfg.OutputDir, checkpoint.MetricsFile))
	if err != nil || len(ms) != 2 || ms[1]["step"] != 2 {
		t.Errorf("metrics after overwrite: %d lines, %v; want the new run's 2", len(ms), err)
	}
	var ckpts []string
	for _, n := range dirNames(t, cfg.OutputDir) {
		if strings.HasPrefix(n, "checkpoint-") {
			ckpts = append(ckpts, n)
		}
	}
	if !slices.Equal(ckpts, []string{"checkpoint-2"}) {
		t.Errorf("checkpoints after overwrite %v, want [checkpoint-2]", ckpts)
	}
	if path, err := grpo.LatestCheckpoint(cfg.OutputDir); err != nil || filepath.Base(path) != "checkpoint-2" {
		t.Errorf("LatestCheckpoint = %q, %v", path, err)
	}
}

// TestCheckOutputDir: CheckOutputDir refuses exactly the folders a fresh
// run's Train refuses, and writes nothing.
func TestCheckOutputDir(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.SaveSteps = 2, 2
	trainSteps(t, cfg)
	logsOnly := t.TempDir()
	if err := os.WriteFile(filepath.Join(logsOnly, checkpoint.MetricsFile), []byte(`{"step":1}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name      string
		dir       string
		overwrite bool
		inUse     bool
	}{
		{"missing folder", filepath.Join(t.TempDir(), "new"), false, false},
		{"empty folder", t.TempDir(), false, false},
		{"logs without a checkpoint (Train keeps them aside)", logsOnly, false, false},
		{"another run's checkpoint", cfg.OutputDir, false, true},
		{"another run's checkpoint, overwrite", cfg.OutputDir, true, false},
		{"a file, not a folder", filepath.Join(logsOnly, checkpoint.MetricsFile), false, false},
	}
	names := func(dir string) []string { // nil for a missing folder or a file
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			return nil
		}
		return dirNames(t, dir)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := names(c.dir)
			err := checkpoint.CheckOutputDir(c.dir, c.overwrite)
			isFile := strings.HasSuffix(c.dir, checkpoint.MetricsFile)
			if got := errors.Is(err, checkpoint.ErrOutputDirInUse); got != c.inUse || (err != nil) != (c.inUse || isFile) {
				t.Fatalf("CheckOutputDir = %v, want in use %v (an error: %v)", err, c.inUse, c.inUse || isFile)
			}
			if isFile {
				return
			}
			var e *checkpoint.OutputDirInUseError
			if c.inUse && (!errors.As(err, &e) || e.Dir != c.dir || !strings.Contains(e.Found, "checkpoint-2") ||
				!strings.Contains(err.Error(), "checkpoint-2")) {
				t.Errorf("error %v (%+v), want an OutputDirInUseError naming %s and checkpoint-2", err, e, c.dir)
			}
			if after := names(c.dir); !slices.Equal(before, after) {
				t.Errorf("CheckOutputDir changed the folder: %v → %v", before, after)
			}
		})
	}
	// Train agrees: a fresh run in the refused folder fails the same way.
	tr, _ := newTrainer(t, cfg)
	if err := tr.Train(context.Background(), sayDataset()); !errors.Is(err, checkpoint.ErrOutputDirInUse) {
		t.Errorf("Train in the refused folder: err = %v, want ErrOutputDirInUse", err)
	}
}

// TestOutputDirLocked: while a running trainer holds OutputDir, another
// run there — fresh, resumed or overwriting — is refused before it writes,
// and CheckOutputDir says so; once the lock is released the run trains.
func TestOutputDirLocked(t *testing.T) {
	if !checkpoint.LockingSupported {
		t.Skip("no flock on this platform")
	}
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.SaveSteps = 2, 2
	held, err := checkpoint.Lock(cfg.OutputDir) // the running trainer
	if err != nil {
		t.Fatal(err)
	}
	before := dirNames(t, cfg.OutputDir)
	for _, overwrite := range []bool{false, true} {
		cfg.OverwriteOutputDir = overwrite
		if err := checkpoint.CheckOutputDir(cfg.OutputDir, overwrite); !errors.Is(err, checkpoint.ErrLocked) {
			t.Errorf("CheckOutputDir (overwrite %v) = %v, want ErrOutputDirLocked", overwrite, err)
		}
		tr, _ := newTrainer(t, cfg)
		err := tr.Train(context.Background(), sayDataset())
		if !errors.Is(err, checkpoint.ErrLocked) || !strings.Contains(err.Error(), "running trainer") {
			t.Errorf("Train (overwrite %v) beside a running trainer: err = %v, want ErrOutputDirLocked", overwrite, err)
		}
	}
	if after := dirNames(t, cfg.OutputDir); !slices.Equal(before, after) {
		t.Errorf("the refused runs changed the folder: %v → %v", before, after)
	}
	held.Release()
	cfg.OverwriteOutputDir = false
	if err := checkpoint.CheckOutputDir(cfg.OutputDir, false); err != nil {
		t.Errorf("CheckOutputDir after release: %v", err)
	}
	trainSteps(t, cfg)
	if _, err := grpo.LatestCheckpoint(cfg.OutputDir); err != nil {
		t.Errorf("the run after release saved no checkpoint: %v", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.OutputDir, ".grpokit.lock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the finished run left its lock file (%v)", err)
	}
	// The finished run released its lock: a program can take it, and
	// hand it to its trainer, which then trains while another is refused.
	held, err = checkpoint.Lock(cfg.OutputDir)
	if err != nil {
		t.Fatalf("lock after a finished run: %v", err)
	}
	defer held.Release()
	cfg.MaxSteps = 3
	other, _ := newTrainer(t, cfg)
	if err := other.Train(context.Background(), sayDataset()); !errors.Is(err, checkpoint.ErrLocked) {
		t.Errorf("Train without the program's lock: err = %v, want ErrLocked", err)
	}
	tr, _ := newTrainer(t, cfg)
	path, err := grpo.LatestCheckpoint(cfg.OutputDir)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Resume(path); err != nil {
		t.Fatal(err)
	}
	tr.OutputLock = held
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Errorf("Train with the program's lock: %v", err)
	}
	if _, err := checkpoint.Lock(cfg.OutputDir); !errors.Is(err, checkpoint.ErrLocked) {
		t.Errorf("the trainer released the program's lock: Lock = %v, want ErrLocked", err)
	}
}

// TestNoCheckpointSentinel: an empty or missing folder gives ErrNoCheckpoint
// (and fs.ErrNotExist); a folder with only broken checkpoints does not.
func TestNoCheckpointSentinel(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{dir, filepath.Join(dir, "missing")} {
		if _, err := grpo.LatestCheckpoint(d); !errors.Is(err, checkpoint.ErrNoCheckpoint) || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("LatestCheckpoint(%s) = %v, want ErrNoCheckpoint", d, err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "checkpoint-7"), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := grpo.LatestCheckpoint(dir)
	if err == nil || errors.Is(err, checkpoint.ErrNoCheckpoint) || !errors.Is(err, checkpoint.ErrCorrupt) ||
		!strings.Contains(err.Error(), "checkpoint-7") {
		t.Errorf("only a broken checkpoint: err = %v, want one naming checkpoint-7, not ErrNoCheckpoint", err)
	}
}

// TestResumeAllOrNothing (finding 4): a Resume that fails part-way through
// variables.gob leaves the weights, the step and the optimizer as they were.
func TestResumeAllOrNothing(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 2
	trainSteps(t, cfg)
	ckpt := filepath.Join(cfg.OutputDir, "checkpoint-2")
	vars := filepath.Join(ckpt, "variables.gob")
	data, err := os.ReadFile(vars)
	if err != nil {
		t.Fatal(err)
	}
	// Cut the file after the first variable (the table), so that a reader
	// that applies as it goes would have changed it.
	if err := os.WriteFile(vars, data[:len(data)*3/4], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, withManifest := range []bool{false, true} {
		if withManifest {
			rewriteManifest(t, ckpt) // the checksum passes; decoding fails
		}
		tr, p := newTrainer(t, cfg)
		want := p.Table()
		err := tr.Resume(ckpt)
		if err == nil || !strings.Contains(err.Error(), "variables.gob") {
			t.Errorf("manifest rewritten %v: Resume = %v, want an error naming variables.gob", withManifest, err)
		}
		if got := p.Table(); !slices.Equal(got, want) || tr.Step() != 0 {
			t.Errorf("manifest rewritten %v: after a failed Resume the step is %d and the table changed: %v", withManifest, tr.Step(), !slices.Equal(got, want))
		}
	}
}

// TestLatestCheckpointSkipsBroken (finding 3): a newer checkpoint folder a
// crash left incomplete (only trainer_state.json, as the old re-save left
// it) is passed over for the newest complete one, which resumes.
func TestLatestCheckpointSkipsBroken(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.SaveSteps = 3, 1
	trainSteps(t, cfg)
	broken := filepath.Join(cfg.OutputDir, "checkpoint-3")
	for _, f := range []string{"variables.gob", "manifest.json", "policy"} {
		if err := os.RemoveAll(filepath.Join(broken, f)); err != nil {
			t.Fatal(err)
		}
	}
	path, err := grpo.LatestCheckpoint(cfg.OutputDir)
	if err != nil || filepath.Base(path) != "checkpoint-2" {
		t.Fatalf("LatestCheckpoint = %q, %v; want checkpoint-2", path, err)
	}
	tr, _ := newTrainer(t, cfg)
	if err := tr.Resume(path); err != nil || tr.Step() != 2 {
		t.Fatalf("Resume(%s) = %v, step %d", path, err, tr.Step())
	}
	all, err := grpo.Checkpoints(cfg.OutputDir)
	if err != nil || len(all) != 3 || all[0].Err == nil || !strings.Contains(all[0].Err.Error(), "manifest") || all[1].Err != nil {
		t.Errorf("Checkpoints = %+v, %v", all, err)
	}
}

// TestResaveCrashWindows (finding 3): a crash at every stage of re-saving a
// step that already has a checkpoint leaves a complete checkpoint of that
// step that LatestCheckpoint finds and Resume reads; the next run tidies
// the leftovers.
func TestResaveCrashWindows(t *testing.T) {
	for _, stage := range []string{"files", "manifest", "aside", "renamed"} {
		t.Run(stage, func(t *testing.T) {
			cfg := smallConfig(t)
			cfg.MaxSteps = 2
			tr, _ := newTrainer(t, cfg)
			if err := tr.Train(context.Background(), sayDataset()); err != nil {
				t.Fatal(err)
			}
			// Saving step 2 again (as a run ending on a SaveSteps multiple
			// does), crashing at stage.
			func() {
				defer func() { _ = recover() }()
				grpo.SetSaveHook(func(s string) {
					if s == stage {
						panic("crash")
					}
				})
				defer grpo.SetSaveHook(nil)
				_, _ = tr.Save(cfg.OutputDir)
			}()
			path, err := grpo.LatestCheckpoint(cfg.OutputDir)
			if err != nil {
				t.Fatalf("after a crash at %q: %v (folder: %v)", stage, err, dirNames(t, cfg.OutputDir))
			}
			tr2, _ := newTrainer(t, cfg)
			if err := tr2.Resume(path); err != nil || tr2.Step() != 2 {
				t.Fatalf("Resume(%s) = %v, step %d", path, err, tr2.Step())
			}
			cfg.MaxSteps = 3
			tr3, _ := newTrainer(t, cfg)
			if err := tr3.Resume(path); err != nil {
				t.Fatal(err)
			}
			if err := tr3.Train(context.Background(), sayDataset()); err != nil {
				t.Fatal(err)
			}
			for _, n := range dirNames(t, cfg.OutputDir) {
				if strings.HasPrefix(n, ".") {
					t.Errorf("leftover %s after the next run", n)
				}
			}
			if path, err := grpo.LatestCheckpoint(cfg.OutputDir); err != nil || filepath.Base(path) != "checkpoint-3" {
				t.Errorf("LatestCheckpoint = %q, %v", path, err)
			}
		})
	}
}

// TestCheckpointCorruption (finding 5): each kind of damage is an error
// naming the file (or value) at fault; none panics or loads silently.
func TestCheckpointCorruption(t *testing.T) {
	flip := func(name string, at float64) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, name)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			data[int(float64(len(data)-1)*at)] ^= 0x10
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	setStep := func(step int) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, "trainer_state.json")
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			var st map[string]any
			if err := json.Unmarshal(data, &st); err != nil {
				t.Fatal(err)
			}
			st["step"] = step
			data, _ = json.Marshal(st)
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			rewriteManifest(t, dir)
		}
	}
	truncate := func(name string, rehash bool) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, name)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data[:len(data)/2], 0o644); err != nil {
				t.Fatal(err)
			}
			if rehash {
				rewriteManifest(t, dir)
			}
		}
	}
	remove := func(name string) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	cases := []struct {
		name    string
		damage  func(t *testing.T, dir string)
		wantErr []string
	}{
		{"variables bit flip (data)", flip("variables.gob", 0.9), []string{"variables.gob", "SHA-256"}},
		{"variables bit flip (header)", flip("variables.gob", 0.05), []string{"variables.gob"}},
		{"policy weights bit flip", flip("policy/weights.txt", 0.5), []string{"policy/weights.txt", "SHA-256"}},
		{"rollouts truncated", truncate("rollouts.gob", false), []string{"rollouts.gob"}},
		{"rollouts truncated, manifest rewritten", truncate("rollouts.gob", true), []string{"rollouts.gob"}},
		{"trainer state bit flip", flip("trainer_state.json", 0.5), []string{"trainer_state.json"}},
		{"step -5", setStep(-5), []string{"trainer_state.json", "step -5"}},
		{"step 100000", setStep(100000), []string{"trainer_state.json", "step 100000"}},
		{"variables.gob missing", remove("variables.gob"), []string{"variables.gob"}},
		{"policy missing", remove("policy"), []string{"policy/weights.txt"}},
		{"manifest missing", remove("manifest.json"), []string{"manifest.json"}},
		{"trainer state missing", remove("trainer_state.json"), []string{"trainer_state.json"}},
	}
	// One run whose checkpoint-3 falls between the NumIterations steps
	// that share rollouts, so it holds rollouts.gob.
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.NumIterations = 3, 2
	trainSteps(t, cfg)
	good := filepath.Join(cfg.OutputDir, "checkpoint-3")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "checkpoint-3")
			if err := os.CopyFS(dir, os.DirFS(good)); err != nil {
				t.Fatal(err)
			}
			tc.damage(t, dir)
			tr, p := newTrainer(t, cfg)
			want := p.Table()
			err := tr.Resume(dir)
			if err == nil {
				t.Fatal("Resume succeeded")
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
			if !slices.Equal(p.Table(), want) || tr.Step() != 0 {
				t.Errorf("a failed Resume changed the trainer")
			}
			if _, err := grpo.LatestCheckpoint(filepath.Dir(dir)); err == nil {
				t.Errorf("LatestCheckpoint accepted the damaged checkpoint")
			}
		})
	}
}

// TestStaleTempFoldersRemoved (finding 5): temporary folders of
// checkpoints a kill interrupted are removed when training starts.
func TestStaleTempFoldersRemoved(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps = 1
	trainSteps(t, cfg)
	stale := filepath.Join(cfg.OutputDir, ".tmp-checkpoint-2-99999")
	if err := os.MkdirAll(filepath.Join(stale, "policy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(stale, "variables.gob"), make([]byte, 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	path, err := grpo.LatestCheckpoint(cfg.OutputDir)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxSteps = 2
	tr, _ := newTrainer(t, cfg)
	if err := tr.Resume(path); err != nil {
		t.Fatal(err)
	}
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale %s still there (%v)", stale, err)
	}
}

// TestPruneKeepsOwnNewest: pruning counts only this run's complete
// checkpoints and never deletes the one just written, even when another
// run's checkpoints have higher steps.
func TestPruneKeepsOwnNewest(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.SaveSteps = 6, 3
	trainSteps(t, cfg)
	// Resume from checkpoint-3 (as after a crash that broke checkpoint-6)
	// with SaveTotalLimit 1: the new checkpoint-4 must survive although
	// checkpoint-6 has a higher step.
	cfg.SaveSteps, cfg.SaveTotalLimit, cfg.MaxSteps = 1, 1, 4
	tr, _ := newTrainer(t, cfg)
	if err := tr.Resume(filepath.Join(cfg.OutputDir, "checkpoint-3")); err != nil {
		t.Fatal(err)
	}
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(cfg.OutputDir, "checkpoint-4")); err != nil {
		t.Errorf("the checkpoint just written was pruned: %v", err)
	}
}

// TestSaveMinutes (finding 7): with SaveMinutes set, a checkpoint is
// written after a step once that much time has passed since the last save,
// whatever SaveSteps says.
func TestSaveMinutes(t *testing.T) {
	cfg := smallConfig(t)
	cfg.MaxSteps, cfg.SaveSteps, cfg.SaveMinutes = 3, 0, 1e-9
	trainSteps(t, cfg)
	for _, n := range []string{"checkpoint-1", "checkpoint-2", "checkpoint-3"} {
		if _, err := os.Stat(filepath.Join(cfg.OutputDir, n)); err != nil {
			t.Errorf("time-based save: %v", err)
		}
	}
}

// TestOutputDirLogsOnly: the logs of a run killed before its first
// checkpoint (nothing to resume) do not block a new run; they are renamed
// aside, never mixed with the new run's.
func TestOutputDirLogsOnly(t *testing.T) {
	cfg := smallConfig(t)
	old := `{"step":1,"loss":0.5}` + "\n" + `{"step":2,"loss":0.25}` + "\n"
	if err := os.WriteFile(filepath.Join(cfg.OutputDir, checkpoint.MetricsFile), []byte(old), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.MaxSteps = 1
	tr, _ := newTrainer(t, cfg)
	var log strings.Builder
	tr.Progress, tr.Logger = io.Discard, textLogger(&log)
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	ms, err := grpo.ReadMetrics(filepath.Join(cfg.OutputDir, checkpoint.MetricsFile))
	if err != nil || len(ms) != 1 || ms[0]["loss"] == 0.5 {
		t.Errorf("new metrics: %v, %v", ms, err)
	}
	var kept string
	for _, n := range dirNames(t, cfg.OutputDir) {
		if strings.HasPrefix(n, checkpoint.MetricsFile+".") {
			kept = n
		}
	}
	if data, err := os.ReadFile(filepath.Join(cfg.OutputDir, kept)); kept == "" || err != nil || string(data) != old {
		t.Errorf("old metrics not kept aside (%q, %v)", kept, err)
	}
	if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), "no checkpoint to resume") || !strings.Contains(log.String(), "file=metrics.jsonl") {
		t.Errorf("no note of it: %q", log.String())
	}
}

// TestPruneIgnoresOtherRuns: SaveTotalLimit counts only the checkpoints of
// the run saving; another run's checkpoints in the folder are never pruned.
func TestPruneIgnoresOtherRuns(t *testing.T) {
	cfgA := smallConfig(t)
	cfgA.MaxSteps, cfgA.SaveSteps = 6, 3
	trainSteps(t, cfgA) // run A: checkpoint-3, checkpoint-6
	cfgB := smallConfig(t)
	cfgB.MaxSteps = 1
	trainSteps(t, cfgB) // run B: checkpoint-1, in its own folder
	fromB := filepath.Join(cfgB.OutputDir, "checkpoint-1")

	// Run B goes on in A's folder, keeping one checkpoint of its own.
	cfgB.OutputDir, cfgB.MaxSteps, cfgB.SaveSteps, cfgB.SaveTotalLimit = cfgA.OutputDir, 2, 1, 1
	tr, _ := newTrainer(t, cfgB)
	tr.AdoptRun = true // B continues in A's folder deliberately (else Resume refuses another run's checkpoint)
	if err := tr.Resume(fromB); err != nil {
		t.Fatal(err)
	}
	if err := tr.Train(context.Background(), sayDataset()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range dirNames(t, cfgA.OutputDir) {
		if strings.HasPrefix(n, "checkpoint-") {
			got = append(got, n)
		}
	}
	// B's checkpoint-2 is its only one; A's 3 and 6 are not B's to prune.
	if want := []string{"checkpoint-2", "checkpoint-3", "checkpoint-6"}; !slices.Equal(got, want) {
		t.Errorf("checkpoints %v, want %v", got, want)
	}
}
