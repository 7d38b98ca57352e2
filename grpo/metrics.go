package grpo

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/grpokit/grpokit/checkpoint"
	"github.com/grpokit/grpokit/internal/regfile"
)

// Metrics is one optimizer step's figures, keyed by TRL's names: "step",
// "loss", "reward", "reward_std", "rewards/<name>/mean", "rewards/<name>/std",
// "rewards/<name>/failures" (calls that panicked, returned a non-finite
// score, timed out, or were skipped), "rewards/<name>/stray" (calls still
// running past their timeout after the step's scoring: while
// reward.Evaluator.MaxStray of them run, the reward is not called), "frac_reward_zero_std",
// "frac_group_zero_std" (groups whose rewards all tie, whatever
// ScaleRewards; not TRL's), "kl" (when Beta > 0),
// "entropy", "clip_ratio/low_mean", "clip_ratio/low_min",
// "clip_ratio/high_mean", "clip_ratio/high_max", "clip_ratio/region_mean"
// (clipped loss types), "cispo_clip_ratio" (cispo), "vespo/phi_seq_mean"
// (vespo), "policy_loss" and "entropy_coef" (with an entropy bonus),
// "dynamic_sampling/groups_drawn", "dynamic_sampling/groups_dropped",
// "dynamic_sampling/rounds" (with DynamicSampling),
// "completions/mean_length", "completions/min_length",
// "completions/max_length", "completions/clipped_ratio",
// "completions/{mean,min,max}_terminated_length", "learning_rate",
// "grad_norm" (before clipping), "nonfinite" (1 for a step whose loss or
// gradient norm was NaN or ±Inf and was therefore not applied, else 0),
// "num_tokens", "rollouts" (completions of the step's generation batch),
// "step_time",
// "generate_time", "train_time" (seconds) and "tokens_per_second".
//
// generate_time is the whole rollout phase of a step; these split it (in
// seconds, 0 on a step that reuses earlier rollouts):
//
//   - "timing/generate": Policy.Generate (TRL profiles it as
//     "profiling/Time taken: GRPOTrainer.transformers.generate");
//   - "timing/reward": scoring with the rewards (TRL:
//     "profiling/Time taken: GRPOTrainer._calculate_rewards");
//   - "timing/logprobs": old and reference log-probs (NumIterations > 1 or
//     StepsPerGeneration > GradientAccumulationSteps; Beta ≠ 0).
//
// train_time is the forward, backward and optimizer passes.
type Metrics map[string]float64

// ReadMetrics reads a metrics.jsonl file written by the trainer: one
// Metrics per line, in step order. Lines that are not JSON objects of
// numbers give an error naming the line and its byte offset; a last line
// without its newline is reported as torn (a run stopped while writing
// it, a full disk: resuming the run repairs the file). null (a NaN or
// ±Inf value, see Trainer) reads as NaN.
func ReadMetrics(path string) ([]Metrics, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, fmt.Errorf("grpo: read metrics: %w", err)
	}
	defer f.Close()
	var out []Metrics
	r := bufio.NewReaderSize(f, 64*1024)
	var offset int64
	for line := 1; ; line++ {
		text, err := r.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("grpo: read metrics: %s: %w", path, err)
		}
		start := offset
		offset += int64(len(text))
		torn := errors.Is(err, io.EOF) && text != ""
		if trimmed := strings.TrimSpace(text); trimmed != "" {
			var raw map[string]*float64
			if jerr := json.Unmarshal([]byte(trimmed), &raw); jerr != nil {
				if torn {
					return nil, fmt.Errorf("grpo: read metrics: %s:%d (byte %d): torn last line, %d bytes without their newline "+
						"(the run stopped while writing it; resuming the run repairs the file): %w", path, line, start, len(text), jerr)
				}
				return nil, fmt.Errorf("grpo: read metrics: %s:%d (byte %d): %w", path, line, start, jerr)
			}
			m := make(Metrics, len(raw))
			for k, v := range raw {
				m[k] = math.NaN() // null: a NaN or ±Inf value
				if v != nil {
					m[k] = *v
				}
			}
			out = append(out, m)
		}
		if err != nil {
			return out, nil
		}
	}
}

// Series returns the steps and values of one metric, for plotting (for
// example with gonum.org/v1/plot's plotter.XYs). Steps without the metric,
// or where it was NaN or ±Inf (null in the file), are skipped.
func Series(ms []Metrics, key string) (steps, values []float64) {
	for _, m := range ms {
		v, ok := m[key]
		if !ok || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		steps = append(steps, m["step"])
		values = append(values, v)
	}
	return steps, values
}

// outputs are the JSONL files of a run.
type outputs struct {
	metrics, rollouts *os.File
}

// openOutputs opens metrics.jsonl (and rollouts.jsonl when logging
// completions) for appending; lines of steps after step (left by a run that
// was killed after its last checkpoint) and a torn last line are first
// moved aside (repairJSONL), so a resumed run writes each step once and
// never appends to half a line.
func openOutputs(c Config, step int, logger *slog.Logger) (*outputs, error) {
	o := &outputs{}
	if c.OutputDir == "" {
		return o, nil
	}
	if err := os.MkdirAll(c.OutputDir, 0o755); err != nil {
		return nil, fmt.Errorf("grpo: output dir: %w", err)
	}
	open := func(name string) (*os.File, error) {
		path := filepath.Join(c.OutputDir, name)
		if err := repairJSONL(path, step, logger); err != nil {
			return nil, err
		}
		f, err := regfile.OpenAppend(path, 0o644)
		if err != nil {
			return nil, fmt.Errorf("grpo: %w", err)
		}
		return f, nil
	}
	var err error
	if o.metrics, err = open(checkpoint.MetricsFile); err != nil {
		return nil, err
	}
	if c.LogCompletions {
		if o.rollouts, err = open(checkpoint.RolloutsFile); err != nil {
			o.close()
			return nil, err
		}
	}
	return o, nil
}

// repairJSONL makes a JSONL file of the run agree with the checkpoint
// the run resumes from (step; 0 for a fresh run): it keeps the complete
// lines of steps up to step, and moves aside, into a file named
// <name>.<time>.aside beside it, the lines of later steps (written after
// that checkpoint by a run that then stopped: those steps are trained
// again, and their old lines must not mix with the new ones), lines that
// do not parse, and a last line torn by a crash or a full disk. It logs
// what it moved (level Warn).
func repairJSONL(path string, step int, logger *slog.Logger) error {
	data, err := regfile.ReadFile(path, regfile.MaxLog)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	var keep, aside []byte
	later, bad, torn := 0, 0, 0
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i+1], data[i+1:]
		} else {
			data = nil
		}
		text := bytes.TrimSpace(line)
		if len(text) == 0 {
			continue
		}
		var s struct {
			Step *float64 `json:"step"`
		}
		switch {
		case line[len(line)-1] != '\n':
			torn++
			aside = append(aside, line...)
			aside = append(aside, '\n')
		case json.Unmarshal(text, &s) != nil:
			bad++
			aside = append(aside, line...)
		case s.Step != nil && *s.Step > float64(step):
			later++
			aside = append(aside, line...)
		default:
			keep = append(keep, line...)
		}
	}
	if len(aside) == 0 {
		return nil
	}
	name := path + "." + time.Now().UTC().Format("20060102T150405.000") + ".aside"
	if err := checkpoint.WriteFileSync(name, aside); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	if err := checkpoint.WriteFileAtomic(path, keep); err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	var what []string
	if later > 0 {
		what = append(what, fmt.Sprintf("%d lines of steps after step %d", later, step))
	}
	if bad > 0 {
		what = append(what, fmt.Sprintf("%d lines that do not parse", bad))
	}
	if torn > 0 {
		what = append(what, "a torn last line")
	}
	logger.Warn(fmt.Sprintf("grpo: %s: moved %s aside", filepath.Base(path), strings.Join(what, " and ")),
		"file", path, "aside", name, "later_lines", later, "bad_lines", bad, "torn_lines", torn)
	return nil
}

// write appends one step's metrics, and its fresh rollouts when asked.
func (o *outputs) write(m Metrics, rows []*row, logRollouts bool) error {
	if o.metrics != nil {
		data, err := json.Marshal(jsonMetrics(m))
		if err != nil {
			return fmt.Errorf("grpo: metrics: %w", err)
		}
		if _, err := o.metrics.Write(append(data, '\n')); err != nil {
			return fmt.Errorf("grpo: metrics: %w", err)
		}
	}
	if o.rollouts != nil && logRollouts {
		for _, r := range rows {
			r.Step = int(m["step"])
			data, err := json.Marshal(r)
			if err != nil {
				return fmt.Errorf("grpo: rollouts: %w", err)
			}
			if _, err := o.rollouts.Write(append(data, '\n')); err != nil {
				return fmt.Errorf("grpo: rollouts: %w", err)
			}
		}
	}
	return nil
}

// jsonMetrics returns m for JSON: NaN and ±Inf, which JSON cannot hold,
// become null (ReadMetrics reads null back as NaN), so a non-finite step
// shows in the file instead of silently lacking its keys.
func jsonMetrics(m Metrics) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			out[k] = nil
		} else {
			out[k] = v
		}
	}
	return out
}

func (o *outputs) close() {
	if o.metrics != nil {
		o.metrics.Close()
	}
	if o.rollouts != nil {
		o.rollouts.Close()
	}
}

// progressLine formats one human-readable line of metrics averaged over
// the steps since the last line (logWindow): step, reward (and each
// reward), loss, KL, tokens/s, step time and ETA.
func (t *Trainer) progressLine(m Metrics, total int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %d/%d | reward %.3f", int(m["step"]), total, m["reward"])
	if n := m["logged_steps"]; n > 1 {
		fmt.Fprintf(&b, " (mean of %d steps)", int(n))
	}
	if len(t.rewards) > 1 {
		parts := make([]string, 0, len(t.rewards))
		for _, r := range t.rewards {
			parts = append(parts, fmt.Sprintf("%s %.3f", r.Name, m["rewards/"+r.Name+"/mean"]))
		}
		fmt.Fprintf(&b, " (%s)", strings.Join(parts, ", "))
	}
	fmt.Fprintf(&b, " | loss %.4f", m["loss"])
	if kl, ok := m["kl"]; ok {
		fmt.Fprintf(&b, " | kl %.4f", kl)
	}
	var failures float64
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if strings.HasSuffix(k, "/failures") {
			failures += m[k]
		}
	}
	if failures > 0 {
		fmt.Fprintf(&b, " | reward failures %d", int(failures))
	}
	fmt.Fprintf(&b, " | %.0f tok/s | %.2fs/step", m["tokens_per_second"], m["step_time"])
	now := time.Now()
	t.marks = append(t.marks, stepMark{step: t.step, at: now})
	if len(t.marks) > etaWindow+1 {
		t.marks = t.marks[len(t.marks)-etaWindow-1:]
	}
	if eta, ok := estimateETA(t.marks, stepMark{step: t.startStep, at: t.started}, total); ok {
		fmt.Fprintf(&b, " | ETA %s", eta.Round(time.Second))
	}
	return b.String()
}

// stepMark is when a step ended.
type stepMark struct {
	step int
	at   time.Time
}

// etaWindow is how many progress lines back the ETA's pace is measured.
const etaWindow = 20

// estimateETA is the time left to step total at the pace of the steps
// between the oldest and newest of marks (the last progress lines), or,
// at the first line, since start. The first steps of a run compile its
// graphs and run several times slower than the rest: averaged over the
// whole run they inflated the ETA (2× on a run of a few hundred steps).
func estimateETA(marks []stepMark, start stepMark, total int) (time.Duration, bool) {
	if len(marks) == 0 {
		return 0, false
	}
	last := marks[len(marks)-1]
	from := start
	if len(marks) > 1 {
		from = marks[0]
	}
	done := last.step - from.step
	if done <= 0 || total <= last.step {
		return 0, false
	}
	per := last.at.Sub(from.at) / time.Duration(done)
	return per * time.Duration(total-last.step), true
}
