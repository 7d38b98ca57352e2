package grpo

import (
	"encoding/gob"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
)

// Saver is an optional interface of a Policy: Save writes the policy's
// weights in a format its users load (a PEFT adapter for LoRA, a Hugging
// Face model directory for full fine-tuning). Checkpoints call it into
// their "policy" subdirectory; the trainer itself restores from its own
// files.
type Saver interface {
	Save(dir string) error
}

// Checkpoint file names inside a checkpoint-<step> directory.
const (
	checkpointPrefix = "checkpoint-"
	stateFile        = "trainer_state.json"
	variablesFile    = "variables.gob"
	rolloutsFile     = "rollouts.gob"
	policyDir        = "policy"
)

// trainerState is trainer_state.json.
type trainerState struct {
	Format    int     `json:"format"`
	Step      int     `json:"step"`
	NumTokens float64 `json:"num_tokens"`
	Config    Config  `json:"config"`
}

// Save writes a checkpoint of the trainer to outputDir/checkpoint-<step>
// and returns its path. The checkpoint holds the trainable weights, the
// optimizer state (AdamW moments, step count, learning rate), the RNG
// state, the data cursor (the step), the config and, between the
// NumIterations steps that share rollouts, those rollouts: Resume from it
// continues exactly as the run that wrote it would have. It is written in a
// temporary directory then renamed, so a crash never leaves a partial
// checkpoint-<step>.
func (t *Trainer) Save(outputDir string) (string, error) {
	final := filepath.Join(outputDir, fmt.Sprintf("%s%d", checkpointPrefix, t.step))
	tmp := filepath.Join(outputDir, fmt.Sprintf(".tmp-%s%d-%d", checkpointPrefix, t.step, os.Getpid()))
	if err := os.MkdirAll(outputDir, 0o755); err != nil {
		return "", fmt.Errorf("grpo: save: %w", err)
	}
	_ = os.RemoveAll(tmp)
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return "", fmt.Errorf("grpo: save: %w", err)
	}
	fail := func(err error) (string, error) {
		_ = os.RemoveAll(tmp)
		return "", fmt.Errorf("grpo: save %s: %w", final, err)
	}
	state, err := json.MarshalIndent(trainerState{Format: 1, Step: t.step, NumTokens: t.numTokens, Config: t.cfg}, "", "  ")
	if err != nil {
		return fail(err)
	}
	if err := writeFileSync(filepath.Join(tmp, stateFile), state); err != nil {
		return fail(err)
	}
	if err := t.saveVariables(filepath.Join(tmp, variablesFile)); err != nil {
		return fail(err)
	}
	if t.buf != nil && t.step%t.cfg.NumIterations != 0 {
		if err := writeGob(filepath.Join(tmp, rolloutsFile), t.buf); err != nil {
			return fail(err)
		}
	}
	if s, ok := t.policy.(Saver); ok {
		if err := s.Save(filepath.Join(tmp, policyDir)); err != nil {
			return fail(err)
		}
	}
	if err := os.RemoveAll(final); err != nil {
		return fail(err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fail(err)
	}
	syncDir(outputDir)
	if err := pruneCheckpoints(outputDir, t.cfg.SaveTotalLimit); err != nil {
		return final, err
	}
	return final, nil
}

// checkpoints returns the complete checkpoint-<step> directories of
// outputDir, oldest first.
func checkpoints(outputDir string) ([]string, error) {
	entries, err := os.ReadDir(outputDir)
	if err != nil {
		return nil, err
	}
	type ckpt struct {
		path string
		step int
	}
	var found []ckpt
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, checkpointPrefix) {
			continue
		}
		step, err := strconv.Atoi(strings.TrimPrefix(name, checkpointPrefix))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(outputDir, name, stateFile)); err != nil {
			continue
		}
		found = append(found, ckpt{filepath.Join(outputDir, name), step})
	}
	sort.Slice(found, func(i, j int) bool { return found[i].step < found[j].step })
	paths := make([]string, len(found))
	for i, c := range found {
		paths[i] = c.path
	}
	return paths, nil
}

// pruneCheckpoints deletes the oldest checkpoints of outputDir beyond the
// newest keep; keep 0 keeps them all.
func pruneCheckpoints(outputDir string, keep int) error {
	if keep <= 0 {
		return nil
	}
	all, err := checkpoints(outputDir)
	if err != nil {
		return fmt.Errorf("grpo: prune checkpoints: %w", err)
	}
	for len(all) > keep {
		if err := os.RemoveAll(all[0]); err != nil {
			return fmt.Errorf("grpo: prune checkpoints: %w", err)
		}
		all = all[1:]
	}
	return nil
}

// savedVariables lists what a checkpoint holds: the policy's trainable
// variables, every variable the trainer added (optimizer state) except the
// gradient accumulators (zero between steps), and the RNG state.
func (t *Trainer) savedVariables() []*mlctx.Variable {
	keep := map[*mlctx.Variable]bool{}
	for _, v := range t.policy.TrainableVariables() {
		keep[v] = true
	}
	var out []*mlctx.Variable
	for v := range t.policy.Context().IterVariables() {
		own := t.ownVars[v]
		if keep[v] || v.Name() == mlctx.RNGStateVariableName ||
			(!own && !strings.HasPrefix(v.Scope(), accScope)) {
			out = append(out, v)
		}
	}
	return out
}

func (t *Trainer) saveVariables(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	enc := gob.NewEncoder(f)
	vars := t.savedVariables()
	if err := enc.Encode(len(vars)); err != nil {
		return err
	}
	for _, v := range vars {
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("variable %s: %w", v.ScopeAndName(), err)
		}
		if err := enc.Encode([2]string{v.Scope(), v.Name()}); err != nil {
			return err
		}
		if err := value.GobSerialize(enc); err != nil {
			return fmt.Errorf("variable %s: %w", v.ScopeAndName(), err)
		}
	}
	return f.Sync()
}

// Resume restores the state Save wrote in checkpoint directory path (see
// LatestCheckpoint). The Trainer must have been made with the same policy
// (same architecture and base weights) and a Config that differs at most in
// MaxSteps, LoggingSteps, SaveSteps, SaveTotalLimit, OutputDir and
// LogCompletions.
func (t *Trainer) Resume(path string) error {
	data, err := os.ReadFile(filepath.Join(path, stateFile))
	if err != nil {
		return fmt.Errorf("grpo: resume: %w", err)
	}
	var st trainerState
	if err := json.Unmarshal(data, &st); err != nil {
		return fmt.Errorf("grpo: resume: %s: %w", stateFile, err)
	}
	if st.Format != 1 {
		return fmt.Errorf("grpo: resume: %s: unknown format %d", stateFile, st.Format)
	}
	if diff := configDiff(st.Config, t.cfg); len(diff) > 0 {
		return fmt.Errorf("grpo: resume: the checkpoint's config differs in %s", strings.Join(diff, ", "))
	}
	if err := t.loadVariables(filepath.Join(path, variablesFile)); err != nil {
		return fmt.Errorf("grpo: resume: %w", err)
	}
	t.buf = nil
	if st.Step%t.cfg.NumIterations != 0 {
		var buf rolloutBatch
		if err := readGob(filepath.Join(path, rolloutsFile), &buf); err != nil {
			return fmt.Errorf("grpo: resume: %w", err)
		}
		t.buf = &buf
	}
	t.step, t.numTokens = st.Step, st.NumTokens
	return nil
}

func (t *Trainer) loadVariables(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	dec := gob.NewDecoder(f)
	var n int
	if err := dec.Decode(&n); err != nil {
		return fmt.Errorf("%s: %w", variablesFile, err)
	}
	ctx := t.policy.Context()
	loaded := map[*mlctx.Variable]bool{}
	var errs []error
	for i := 0; i < n; i++ {
		var key [2]string
		if err := dec.Decode(&key); err != nil {
			return fmt.Errorf("%s: variable %d: %w", variablesFile, i, err)
		}
		value, err := tensors.GobDeserialize(dec)
		if err != nil {
			return fmt.Errorf("%s: %s/%s: %w", variablesFile, key[0], key[1], err)
		}
		v := ctx.GetVariableByScopeAndName(key[0], key[1])
		if v == nil {
			// Optimizer state not built yet: create it with its value; the
			// optimizer finds and reuses it.
			v = ctx.InAbsPath(key[0]).Checked(false).VariableWithValue(key[1], value).SetTrainable(false)
		} else {
			if !v.Shape().Equal(value.Shape()) {
				errs = append(errs, fmt.Errorf("variable %s: checkpoint shape %s, policy shape %s", v.ScopeAndName(), value.Shape(), v.Shape()))
				continue
			}
			if err := v.SetValue(value); err != nil {
				errs = append(errs, fmt.Errorf("variable %s: %w", v.ScopeAndName(), err))
				continue
			}
		}
		loaded[v] = true
	}
	for _, v := range t.policy.TrainableVariables() {
		if !loaded[v] {
			errs = append(errs, fmt.Errorf("trainable variable %s is not in the checkpoint", v.ScopeAndName()))
		}
	}
	return errors.Join(errs...)
}

// configDiff names the JSON fields in which two configs differ, ignoring
// those a resumed run may change.
func configDiff(a, b Config) []string {
	free := map[string]bool{"max_steps": true, "logging_steps": true, "save_steps": true, "save_total_limit": true, "output_dir": true, "log_completions": true}
	toMap := func(c Config) map[string]any {
		data, _ := json.Marshal(c)
		var m map[string]any
		_ = json.Unmarshal(data, &m)
		return m
	}
	ma, mb := toMap(a), toMap(b)
	var diff []string
	for k, va := range ma {
		if !free[k] && fmt.Sprint(va) != fmt.Sprint(mb[k]) {
			diff = append(diff, k)
		}
	}
	sort.Strings(diff)
	return diff
}

// LatestCheckpoint returns the checkpoint-<step> directory of outputDir
// with the highest step, or an error wrapping fs.ErrNotExist when there is
// none.
func LatestCheckpoint(outputDir string) (string, error) {
	all, err := checkpoints(outputDir)
	if err != nil {
		return "", fmt.Errorf("grpo: latest checkpoint: %w", err)
	}
	if len(all) == 0 {
		return "", fmt.Errorf("grpo: latest checkpoint: no checkpoint in %s: %w", outputDir, fs.ErrNotExist)
	}
	return all[len(all)-1], nil
}

// writeFileSync writes data to path and syncs it.
func writeFileSync(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeFileAtomic replaces path with data through a temporary file.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := writeFileSync(tmp, data); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	return nil
}

func writeGob(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := gob.NewEncoder(f).Encode(v); err != nil {
		return err
	}
	return f.Sync()
}

func readGob(path string, v any) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return gob.NewDecoder(f).Decode(v)
}

// syncDir makes a rename in dir durable (best effort).
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
