package grpo

import (
	"crypto/rand"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/internal/regfile"
)

// Saver is an optional interface of a Policy: Save writes the policy's
// weights in a format its users load (a PEFT adapter for LoRA, a Hugging
// Face model directory for full fine-tuning). Checkpoints call it into
// their "policy" subdirectory; the trainer itself restores from its own
// files.
type Saver interface {
	Save(dir string) error
}

// The trainer's files inside a checkpoint-<step> folder (package
// checkpoint writes the folder, its manifest and the renames).
const (
	stateFile     = "trainer_state.json"
	variablesFile = "variables.gob"
	rolloutsFile  = "rollouts.gob"
	policyDir     = "policy"
	// referenceFile holds the reference model's weights when
	// Config.SyncRefModel moves them away from the initial model.
	referenceFile = "reference.gob"
)

// requiredFiles are the trainer's files every checkpoint of a run with
// config c holds (rollouts.gob depends on the step as well).
func requiredFiles(c Config) []string {
	need := []string{stateFile, variablesFile}
	if c.SyncRefModel {
		need = append(need, referenceFile)
	}
	return need
}

// trainerState is trainer_state.json.
type trainerState struct {
	Format    int     `json:"format"`
	Step      int     `json:"step"`
	NumTokens float64 `json:"num_tokens"`
	// RunID names the run that wrote the checkpoint (kept across resumes),
	// so that pruning never counts another run's checkpoints.
	RunID  string `json:"run_id,omitempty"`
	Config Config `json:"config"`
	// EntropyCoef and LastEntropy are adaptive entropy control's state
	// (Config.UseAdaptiveEntropy): the coefficient, and the last step's
	// entropy (absent before the first step, which TRL's +inf means).
	EntropyCoef *float64 `json:"entropy_coef,omitempty"`
	LastEntropy *float64 `json:"last_entropy,omitempty"`
	// NonFiniteSteps counts the steps of the run not applied because their
	// loss or gradient norm was not finite; the optimizer's global_step
	// lies between Step − NonFiniteSteps and Step.
	NonFiniteSteps int `json:"nonfinite_steps,omitempty"`
}

// saveHook, when set (by tests only), is called at each stage of a
// checkpoint write: "files", "manifest", "aside", "renamed".
var saveHook func(stage string)

// Save writes a checkpoint of the trainer to outputDir/checkpoint-<step>
// and returns its path. The checkpoint holds the trainable weights, the
// optimizer state (AdamW moments, step count, learning rate), the RNG
// state, the data cursor (the step), the config, with SyncRefModel the
// reference model's weights and, when the next step continues a
// generation batch (NumIterations > 1 or StepsPerGeneration >
// GradientAccumulationSteps), that batch's rollouts: Resume from it
// continues exactly as the run that wrote it would have.
//
// The files are written and synced in a temporary folder, then
// manifest.json (every file with its size and SHA-256) is written last and
// the folder renamed into place, so a crash never leaves a checkpoint that
// counts as complete but is not. Saving a step that already has a
// checkpoint moves the old one aside, renames the new one in, then deletes
// the old one: at every moment one complete copy can be found (see
// LatestCheckpoint). Save refuses to write weights that are NaN or ±Inf.
// After saving, checkpoints of this run beyond Config.SaveTotalLimit are
// deleted, oldest first, never the one just written.
func (t *Trainer) Save(outputDir string) (string, error) {
	if err := t.checkFiniteWeights(); err != nil {
		return "", fmt.Errorf("grpo: save %s: %w", filepath.Join(outputDir, checkpoint.Name(t.step)), err)
	}
	final, err := checkpoint.Write(outputDir, t.step, t.writeCheckpoint, saveHook)
	if err != nil {
		return "", fmt.Errorf("grpo: save: %w", err)
	}
	t.rel.lastSave, t.rel.savedStep = time.Now(), t.step
	runID := t.runID()
	mine := func(dir string) bool {
		st, err := readStateFile(dir)
		return err == nil && st.RunID == runID
	}
	if err := checkpoint.Prune(outputDir, t.cfg.SaveTotalLimit, final, mine); err != nil {
		return final, fmt.Errorf("grpo: save: %w", err)
	}
	return final, nil
}

// writeCheckpoint writes the trainer's files of a checkpoint into dir.
func (t *Trainer) writeCheckpoint(dir string) error {
	ts := trainerState{Format: 1, Step: t.step, NumTokens: t.numTokens, RunID: t.runID(), Config: t.cfg, NonFiniteSteps: t.rel.totalNonFinite}
	if t.cfg.UseAdaptiveEntropy {
		ts.EntropyCoef = &t.entropy.coef
		if !math.IsInf(t.entropy.last, 1) {
			ts.LastEntropy = &t.entropy.last
		}
	}
	state, err := json.MarshalIndent(ts, "", "  ")
	if err != nil {
		return err
	}
	if err := checkpoint.WriteFileSync(filepath.Join(dir, stateFile), state); err != nil {
		return err
	}
	if err := writeVariables(filepath.Join(dir, variablesFile), t.savedVariables()); err != nil {
		return err
	}
	if t.cfg.SyncRefModel {
		if err := writeVariables(filepath.Join(dir, referenceFile), slices.Collect(t.refCtx.IterVariables())); err != nil {
			return err
		}
	}
	if t.buf != nil && t.cfg.midGeneration(t.step) {
		if err := writeGob(filepath.Join(dir, rolloutsFile), t.buf); err != nil {
			return err
		}
	}
	if s, ok := t.policy.(Saver); ok {
		if err := s.Save(filepath.Join(dir, policyDir)); err != nil {
			return err
		}
	}
	return nil
}

// LatestCheckpoint returns the newest complete checkpoint of outputDir
// whose files all match its manifest and whose trainer state and rollouts
// decode with sensible values (checkpoint.Latest with the trainer's
// checks). Broken checkpoints it passes over are logged to slog.Default()
// at level Warn, each with what is wrong (Trainer.LatestCheckpoint logs
// them to the trainer's Logger). When outputDir holds no
// checkpoint at all the error wraps checkpoint.ErrNoCheckpoint (and
// fs.ErrNotExist); when it holds only broken ones the error names each
// and wraps checkpoint.ErrCorrupt instead, so a caller can tell "nothing
// to resume" from "cannot resume":
//
//	path, err := grpo.LatestCheckpoint(dir)
//	switch {
//	case errors.Is(err, checkpoint.ErrNoCheckpoint): // first run
//	case err != nil:
//		return err // checkpoints exist but none can be read
//	default:
//		if err := tr.Resume(path); err != nil {
//			return err
//		}
//	}
func LatestCheckpoint(outputDir string) (string, error) {
	path, err := checkpoint.Latest(outputDir, checkCheckpoint, nil)
	if err != nil {
		return "", fmt.Errorf("grpo: %w", err)
	}
	return path, nil
}

// LatestCheckpoint is the package function LatestCheckpoint of the
// trainer's Config.OutputDir, logging the broken checkpoints it passes
// over to the trainer's Logger.
func (t *Trainer) LatestCheckpoint() (string, error) {
	path, err := checkpoint.Latest(t.cfg.OutputDir, checkCheckpoint, t.logger())
	if err != nil {
		return "", fmt.Errorf("grpo: %w", err)
	}
	return path, nil
}

// Checkpoints lists the checkpoint folders of outputDir, newest first,
// each verified as LatestCheckpoint does: every file against the manifest,
// the trainer state's values and the rollouts (the variables are decoded
// only by Resume).
func Checkpoints(outputDir string) ([]checkpoint.Status, error) {
	st, err := checkpoint.Statuses(outputDir, checkCheckpoint)
	if err != nil {
		return nil, fmt.Errorf("grpo: %w", err)
	}
	return st, nil
}

// checkCheckpoint checks checkpoint folder dir as LatestCheckpoint does.
func checkCheckpoint(dir string) error {
	_, _, err := inspectCheckpoint(dir)
	return err
}

// readStateFile reads the trainer_state.json of checkpoint folder dir.
func readStateFile(dir string) (*trainerState, error) {
	data, err := regfile.ReadFile(filepath.Join(dir, stateFile), regfile.MaxMeta)
	if err != nil {
		return nil, err
	}
	return parseState(data)
}

// parseState decodes trainer_state.json and checks its values.
func parseState(data []byte) (*trainerState, error) {
	// A setting added after the checkpoint was written is absent from it:
	// the default, which is what the older code did.
	st := trainerState{Config: DefaultConfig()}
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, checkpoint.Corruptf("%s: %v", stateFile, err)
	}
	if st.Format != 1 {
		return nil, checkpoint.Corruptf("%s: unknown format %d", stateFile, st.Format)
	}
	if err := st.Config.Validate(); err != nil {
		return nil, checkpoint.Corruptf("%s: config: %v", stateFile, err)
	}
	if st.Step < 0 {
		return nil, checkpoint.Corruptf("%s: step %d is negative", stateFile, st.Step)
	}
	if st.Config.MaxSteps > 0 && st.Step > st.Config.MaxSteps {
		return nil, checkpoint.Corruptf("%s: step %d is beyond the run's max_steps %d", stateFile, st.Step, st.Config.MaxSteps)
	}
	if math.IsNaN(st.NumTokens) || math.IsInf(st.NumTokens, 0) || st.NumTokens < 0 {
		return nil, checkpoint.Corruptf("%s: num_tokens %v", stateFile, st.NumTokens)
	}
	if st.Config.UseAdaptiveEntropy && (st.EntropyCoef == nil || !finite(*st.EntropyCoef) || (st.LastEntropy != nil && !finite(*st.LastEntropy))) {
		return nil, checkpoint.Corruptf("%s: adaptive entropy control: entropy_coef %v, last_entropy %v", stateFile, st.EntropyCoef, st.LastEntropy)
	}
	return &st, nil
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

// writeVariables writes vars (scope, name and value each) to path with
// encoding/gob and syncs it.
func writeVariables(path string, vars []*mlctx.Variable) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	enc := gob.NewEncoder(f)
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

// savedVar is one variable read from variables.gob.
type savedVar struct {
	scope, name string
	value       *tensors.Tensor
}

// maxSavedElements bounds one saved tensor (2^34 elements), so that a
// corrupted shape fails instead of allocating without end.
const maxSavedElements = 1 << 34

// decodeVariables reads variables.gob or reference.gob (name, for the
// errors; the layout writeVariables writes) without trusting it: shapes,
// dtypes and data lengths are checked before anything is allocated from
// them.
func decodeVariables(r io.Reader, name string) (vars []savedVar, err error) {
	defer func() {
		if p := recover(); p != nil {
			vars, err = nil, checkpoint.Corruptf("%s: %v", name, p)
		}
	}()
	dec := gob.NewDecoder(r)
	var n int
	if err := dec.Decode(&n); err != nil {
		return nil, checkpoint.Corruptf("%s: %v", name, err)
	}
	if n < 0 || n > 1<<20 {
		return nil, checkpoint.Corruptf("%s: %d variables", name, n)
	}
	for i := 0; i < n; i++ {
		var key [2]string
		if err := dec.Decode(&key); err != nil {
			return nil, checkpoint.Corruptf("%s: variable %d: %v", name, i, err)
		}
		value, err := decodeTensor(dec)
		if err != nil {
			return nil, checkpoint.Corruptf("%s: %s/%s: %v", name, key[0], key[1], err)
		}
		vars = append(vars, savedVar{key[0], key[1], value})
	}
	return vars, nil
}

// decodeTensor reads one tensor written by Tensor.GobSerialize.
func decodeTensor(dec *gob.Decoder) (*tensors.Tensor, error) {
	var dtype dtypes.DType
	var dims []int
	var tuples int
	if err := dec.Decode(&dtype); err != nil {
		return nil, err
	}
	if err := dec.Decode(&dims); err != nil {
		return nil, err
	}
	if err := dec.Decode(&tuples); err != nil {
		return nil, err
	}
	if tuples != 0 {
		return nil, fmt.Errorf("tuple shape (%d)", tuples)
	}
	if !dtype.IsSupported() || dtype.GoType() == nil {
		return nil, fmt.Errorf("unsupported dtype %d", int(dtype))
	}
	size := 1
	for _, d := range dims {
		if d < 0 || (d > 0 && size > maxSavedElements/d) {
			return nil, fmt.Errorf("bad dimensions %v", dims)
		}
		size *= d
	}
	flat := reflect.New(reflect.SliceOf(dtype.GoType()))
	if err := dec.Decode(flat.Interface()); err != nil {
		return nil, err
	}
	if got := flat.Elem().Len(); got != size {
		return nil, fmt.Errorf("%d values for shape %v", got, dims)
	}
	t := tensors.FromShape(shapes.Make(dtype, dims...))
	if err := t.MutableFlatData(func(dst any) { reflect.Copy(reflect.ValueOf(dst), flat.Elem()) }); err != nil {
		return nil, err
	}
	return t, nil
}

// decodeRollouts reads rollouts.gob.
func decodeRollouts(r io.Reader) (buf *rolloutBatch, err error) {
	defer func() {
		if p := recover(); p != nil {
			buf, err = nil, checkpoint.Corruptf("%s: %v", rolloutsFile, p)
		}
	}()
	buf = &rolloutBatch{}
	if err := gob.NewDecoder(r).Decode(buf); err != nil {
		return nil, checkpoint.Corruptf("%s: %v", rolloutsFile, err)
	}
	if len(buf.Rows) == 0 || len(buf.Micro) == 0 {
		return nil, checkpoint.Corruptf("%s: %d rows in %d micro-batches", rolloutsFile, len(buf.Rows), len(buf.Micro))
	}
	for i, mb := range buf.Micro {
		if err := mb.check(); err != nil {
			return nil, checkpoint.Corruptf("%s: micro-batch %d: %v", rolloutsFile, i, err)
		}
	}
	return buf, nil
}

// check reports a micro-batch whose sizes disagree (read from a file, it
// would otherwise fail deep inside a graph).
func (mb *microBatch) check() error {
	if mb == nil {
		return errors.New("missing")
	}
	const limit = 1 << 20
	if mb.B < 1 || mb.P < 0 || mb.C < 1 || mb.B > limit || mb.P > limit || mb.C > limit || mb.Rows < 0 || mb.Rows > mb.B {
		return fmt.Errorf("sizes B %d, P %d, C %d, rows %d", mb.B, mb.P, mb.C, mb.Rows)
	}
	bl, bc := mb.B*(mb.P+mb.C), mb.B*mb.C
	ok := len(mb.Tokens) == bl && len(mb.Mask) == bl && len(mb.LossMask) == bc && len(mb.Weights) == bc &&
		(len(mb.Adv) == mb.B && !mb.TokenAdv || len(mb.Adv) == bc && mb.TokenAdv) && (mb.Old == nil || len(mb.Old) == bc) && (mb.Ref == nil || len(mb.Ref) == bc) &&
		(mb.ToolMask == nil || len(mb.ToolMask) == bc)
	if !ok {
		return fmt.Errorf("tensor lengths do not match B %d, P %d, C %d", mb.B, mb.P, mb.C)
	}
	return nil
}

// checkpointData is everything Resume reads, decoded and checked.
type checkpointData struct {
	state *trainerState
	vars  []savedVar
	ref   []savedVar // the reference model's weights (SyncRefModel)
	buf   *rolloutBatch
}

// inspectCheckpoint checks checkpoint folder dir without decoding its
// variables: every file against the manifest, the trainer state's values
// and, when the step needs them, the rollouts.
func inspectCheckpoint(dir string) (*trainerState, *rolloutBatch, error) {
	if err := checkpoint.Verify(dir, true, stateFile, variablesFile); err != nil {
		return nil, nil, err
	}
	st, err := readStateFile(dir)
	if err != nil {
		return nil, nil, err
	}
	if err := checkpoint.Verify(dir, false, requiredFiles(st.Config)...); err != nil {
		return nil, nil, err
	}
	if step, _, ok := checkpoint.ParseName(filepath.Base(dir)); ok && step != st.Step {
		return nil, nil, checkpoint.Corruptf("%s: step %d in a folder named for step %d", stateFile, st.Step, step)
	}
	if !st.Config.midGeneration(st.Step) {
		return st, nil, nil
	}
	f, err := regfile.Open(filepath.Join(dir, rolloutsFile))
	if err != nil {
		return nil, nil, checkpoint.Corruptf("%s: %v", rolloutsFile, err)
	}
	defer f.Close()
	buf, err := decodeRollouts(f)
	if err != nil {
		return nil, nil, err
	}
	if want := st.Config.stepSchedule(st.Step)[0].Batch; buf.Index != want {
		return nil, nil, checkpoint.Corruptf("%s: rollout batch %d at step %d, want batch %d", rolloutsFile, buf.Index, st.Step, want)
	}
	return st, buf, nil
}

// readCheckpoint reads and verifies checkpoint folder dir (see
// inspectCheckpoint) and decodes its variables. Each error names the file
// it is about.
func readCheckpoint(dir string) (*checkpointData, error) {
	st, buf, err := inspectCheckpoint(dir)
	if err != nil {
		return nil, err
	}
	vars, err := readVariablesFile(dir, variablesFile)
	if err != nil {
		return nil, err
	}
	cd := &checkpointData{state: st, vars: vars, buf: buf}
	if st.Config.SyncRefModel {
		if cd.ref, err = readVariablesFile(dir, referenceFile); err != nil {
			return nil, err
		}
	}
	return cd, nil
}

// readVariablesFile decodes the variables file name of checkpoint folder
// dir.
func readVariablesFile(dir, name string) ([]savedVar, error) {
	f, err := regfile.Open(filepath.Join(dir, name))
	if err != nil {
		return nil, checkpoint.Corruptf("%s: %v", name, err)
	}
	defer f.Close()
	return decodeVariables(f, name)
}

// Resume restores the state Save wrote in checkpoint directory path (see
// LatestCheckpoint). The Trainer must have been made with the same policy
// (same architecture and base weights) and a Config that differs at most in
// MaxSteps, LoggingSteps, SaveSteps, SaveTotalLimit, OutputDir,
// LogCompletions, NumCompletionsToPrint, LogUniquePrompts and the
// reliability settings (OverwriteOutputDir,
// SaveMinutes, MaxNonFiniteSteps, RewardTimeout, RewardWorkers).
//
// Resume is all or nothing: it first reads and verifies every file of the
// checkpoint (each against its size and SHA-256 in the manifest, the policy
// weights included), the trainer state's values and every variable's shape,
// and only then changes the Trainer. On error the Trainer is exactly as it
// was; a checkpoint that does not match its manifest or cannot be decoded
// gives an error wrapping checkpoint.ErrCorrupt and naming the file.
func (t *Trainer) Resume(path string) error {
	cd, err := readCheckpoint(path)
	if err != nil {
		return fmt.Errorf("grpo: resume %s: %w", path, err)
	}
	st := cd.state
	if diff := configDiff(st.Config, t.cfg); len(diff) > 0 {
		return fmt.Errorf("grpo: resume %s: the checkpoint's config differs in %s", path, strings.Join(diff, ", "))
	}
	if t.cfg.MaxSteps > 0 && st.Step > t.cfg.MaxSteps {
		return fmt.Errorf("grpo: resume %s: the checkpoint is at step %d, beyond MaxSteps %d", path, st.Step, t.cfg.MaxSteps)
	}
	if err := t.checkRunIdentity(path, st.RunID); err != nil {
		return fmt.Errorf("grpo: resume %s: %w", path, err)
	}
	if err := checkGlobalStep(st, cd.vars); err != nil {
		return fmt.Errorf("grpo: resume %s: %w", path, err)
	}
	apply, err := t.planVariables(cd.vars)
	if err != nil {
		return fmt.Errorf("grpo: resume %s: %s: %w", path, variablesFile, err)
	}
	applyRef := func() error { return nil }
	if t.cfg.SyncRefModel {
		if applyRef, err = planReference(t.refCtx, cd.ref); err != nil {
			return fmt.Errorf("grpo: resume %s: %s: %w", path, referenceFile, err)
		}
	}
	// Everything is checked: now change the trainer.
	if err := apply(); err != nil {
		return fmt.Errorf("grpo: resume %s: %w", path, err)
	}
	if err := applyRef(); err != nil {
		return fmt.Errorf("grpo: resume %s: reference model: %w", path, err)
	}
	t.buf = cd.buf
	t.step, t.numTokens = st.Step, st.NumTokens
	t.entropy = newEntropyControl(t.cfg)
	if st.EntropyCoef != nil {
		t.entropy.coef = *st.EntropyCoef
	}
	if st.LastEntropy != nil {
		t.entropy.last = *st.LastEntropy
	}
	t.rel.resumed = true
	t.rel.id = st.RunID
	t.rel.savedStep = st.Step
	t.rel.totalNonFinite = st.NonFiniteSteps
	return nil
}

// planVariables matches saved variables to the policy's context, checking
// shapes and that every trainable variable is there, and returns the
// function that sets them (creating optimizer state not built yet).
func (t *Trainer) planVariables(vars []savedVar) (func() error, error) {
	ctx := t.policy.Context()
	var sets []variableSet
	var creates []savedVar
	loaded := map[*mlctx.Variable]bool{}
	var errs []error
	for _, sv := range vars {
		v := ctx.GetVariableByScopeAndName(sv.scope, sv.name)
		if v == nil {
			creates = append(creates, sv)
			continue
		}
		if !v.Shape().Equal(sv.value.Shape()) {
			errs = append(errs, fmt.Errorf("variable %s: checkpoint shape %s, policy shape %s", v.ScopeAndName(), sv.value.Shape(), v.Shape()))
			continue
		}
		sets = append(sets, variableSet{v, sv})
		loaded[v] = true
	}
	for _, v := range t.policy.TrainableVariables() {
		if !loaded[v] {
			errs = append(errs, fmt.Errorf("trainable variable %s is not in the checkpoint", v.ScopeAndName()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return func() error {
		if err := setValues(sets); err != nil {
			return err
		}
		for _, sv := range creates {
			// Optimizer state not built yet: create it with its value; the
			// optimizer finds and reuses it.
			ctx.InAbsPath(sv.scope).Checked(false).VariableWithValue(sv.name, sv.value).SetTrainable(false)
		}
		return nil
	}, nil
}

// planReference matches the saved reference weights to the variables of
// the reference model's context ctx, one for one with equal shapes, and
// returns the function that sets them.
func planReference(ctx *mlctx.Context, vars []savedVar) (func() error, error) {
	var sets []variableSet
	loaded := map[*mlctx.Variable]bool{}
	var errs []error
	for _, sv := range vars {
		v := ctx.GetVariableByScopeAndName(sv.scope, sv.name)
		switch {
		case v == nil:
			errs = append(errs, fmt.Errorf("variable %s/%s is not in the reference model", sv.scope, sv.name))
		case !v.Shape().Equal(sv.value.Shape()):
			errs = append(errs, fmt.Errorf("reference variable %s: checkpoint shape %s, model shape %s", v.ScopeAndName(), sv.value.Shape(), v.Shape()))
		default:
			sets = append(sets, variableSet{v, sv})
			loaded[v] = true
		}
	}
	for v := range ctx.IterVariables() {
		if !loaded[v] {
			errs = append(errs, fmt.Errorf("reference variable %s is not in the checkpoint", v.ScopeAndName()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return func() error { return setValues(sets) }, nil
}

// variableSet is a variable and the value a checkpoint saved for it.
type variableSet struct {
	v     *mlctx.Variable
	saved savedVar
}

// setValues sets each variable to its saved value.
func setValues(sets []variableSet) error {
	for _, s := range sets {
		if err := s.v.SetValue(s.saved.value); err != nil {
			return fmt.Errorf("variable %s: %w", s.v.ScopeAndName(), err)
		}
	}
	return nil
}

// configDiff names the JSON fields in which two configs differ, ignoring
// those a resumed run may change.
func configDiff(a, b Config) []string {
	free := map[string]bool{"max_steps": true, "logging_steps": true, "save_steps": true, "save_total_limit": true,
		"output_dir": true, "log_completions": true, "num_completions_to_print": true, "log_unique_prompts": true,
		"overwrite_output_dir": true, "save_minutes": true,
		"max_nonfinite_steps": true, "reward_timeout": true, "reward_workers": true}
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

// newRunID returns a random run id.
func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkFiniteWeights returns an error naming the first trainable variable
// holding NaN or ±Inf, so that no checkpoint ever carries such weights.
func (t *Trainer) checkFiniteWeights() error {
	for _, v := range t.policy.TrainableVariables() {
		value, err := v.Value()
		if err != nil {
			return fmt.Errorf("variable %s: %w", v.ScopeAndName(), err)
		}
		bad := false
		_ = value.ConstFlatData(func(flat any) {
			switch x := flat.(type) {
			case []float32:
				for _, f := range x {
					if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
						bad = true
						return
					}
				}
			case []float64:
				for _, f := range x {
					if math.IsNaN(f) || math.IsInf(f, 0) {
						bad = true
						return
					}
				}
			}
		})
		if bad {
			return fmt.Errorf("variable %s holds NaN or ±Inf: not saving it", v.ScopeAndName())
		}
	}
	return nil
}

// writeGob writes v to path with encoding/gob and syncs it.
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

// ErrForeignRun is wrapped by Resume's error when the checkpoint is of
// another run than the checkpoints OutputDir holds (see Trainer.AdoptRun).
var ErrForeignRun = errors.New("the checkpoint is of another run than the output folder's")

// checkRunIdentity refuses a checkpoint of run id when OutputDir holds
// checkpoints of another run, unless AdoptRun is set.
func (t *Trainer) checkRunIdentity(path, id string) error {
	if t.cfg.OutputDir == "" || t.AdoptRun || id == "" {
		return nil
	}
	all, err := checkpoint.List(t.cfg.OutputDir)
	if err != nil {
		return nil // no folder yet: nothing to mix with
	}
	abs, _ := filepath.Abs(path)
	for _, c := range all {
		if p, _ := filepath.Abs(c.Path); c.Aside || p == abs {
			continue
		}
		other, err := readStateFile(c.Path)
		if err != nil || other.RunID == "" || other.RunID == id {
			continue
		}
		return fmt.Errorf("%w: it is of run %s, but %s holds run %s's %s; resuming would mix the two runs' checkpoints "+
			"and metrics: resume that run's checkpoint, use another output folder, or adopt this run deliberately "+
			"(Trainer.AdoptRun; grpokit train -adopt)", ErrForeignRun, id, t.cfg.OutputDir, other.RunID, filepath.Base(c.Path))
	}
	return nil
}

// checkGlobalStep checks the optimizer's step counter (the root
// global_step variable) against the trainer state's step: a checkpoint
// whose state was relabelled to another step is corrupt.
func checkGlobalStep(st *trainerState, vars []savedVar) error {
	for _, v := range vars {
		if v.name != "global_step" || (v.scope != "/" && v.scope != "") || v.value == nil || v.value.Size() != 1 {
			continue
		}
		var gs int64
		switch x := v.value.Value().(type) {
		case int64:
			gs = x
		case int32:
			gs = int64(x)
		default:
			return nil
		}
		if gs > int64(st.Step) || gs < int64(st.Step-st.NonFiniteSteps) {
			return checkpoint.Corruptf("%s: step %d (%d not applied), but the optimizer's global_step is %d", stateFile, st.Step, st.NonFiniteSteps, gs)
		}
		return nil
	}
	return nil
}
