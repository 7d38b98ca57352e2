// Command gpukit is the Go half of the GPU kit (bench/gpukit/run.sh): it
// checks that a backend runs a graph and reads the other steps' outputs
// into one-line results.
//
//	gpukit info                    # the backend ($GOMLX_BACKEND), its PJRT plugin and a checked product
//	gpukit golden LOG [PATTERN]    # a test binary's -test.v output: passes, failures, their worst differences, tests of PATTERN that did not run
//	gpukit poker METRICS.jsonl     # the reward curve and steps per second of an examples/poker run
//	gpukit step GO.json [HF.json]  # a bench/grpostep -json result beside bench/hf_grpostep.py's
//
// Each prints its result on the last line of its output, which run.sh
// puts in the summary table; info exits with an error when the backend
// cannot be made or computes a wrong product.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	. "github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/internal/backend"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gpukit:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: gpukit info | golden LOG [PATTERN] | poker METRICS.jsonl | step GO.json [HF.json]")
	}
	switch cmd, rest := args[0], args[1:]; {
	case cmd == "info" && len(rest) == 0:
		return info(w)
	case cmd == "golden" && (len(rest) == 1 || len(rest) == 2):
		pattern := ""
		if len(rest) == 2 {
			pattern = rest[1]
		}
		return golden(w, rest[0], pattern)
	case cmd == "poker" && len(rest) == 1:
		return poker(w, rest[0])
	case cmd == "step" && (len(rest) == 1 || len(rest) == 2):
		return step(w, rest)
	}
	return fmt.Errorf("unknown command or arguments %q", args)
}

// info makes the backend named by $GOMLX_BACKEND, prints it (for XLA: the
// plugin's path and PJRT C API version, the devices) and checks a
// 64×64 product against one computed here.
func info(w io.Writer) error {
	config := backend.Resolve("")
	b, err := backend.New(config)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "backend %q: %s\n", config, b.Description())
	const n = 64
	a := make([]float32, n*n)
	for i := range a {
		a[i] = float32(i%7) - 3
	}
	out, err := ExecOnce(b, func(x *Node) *Node { return MatMul(x, Transpose(x, 0, 1)) }, tensors.FromFlatDataAndDimensions(a, n, n))
	if err != nil {
		return fmt.Errorf("a 64×64 product on %q: %w", config, err)
	}
	got := tensors.MustCopyFlatData[float32](out)
	for i := range n {
		for j := range n {
			want := float32(0)
			for k := range n {
				want += a[i*n+k] * a[j*n+k]
			}
			if got[i*n+j] != want {
				return fmt.Errorf("a 64×64 product on %q: element [%d,%d] = %v, want %v", config, i, j, got[i*n+j], want)
			}
		}
	}
	fmt.Fprintf(w, "ok: %s ran a checked 64×64 product\n", config)
	return nil
}

var (
	testLine = regexp.MustCompile(`^(\s*)--- (PASS|FAIL|SKIP): (\S+) \(([0-9.]+)s\)`)
	// The tests' own words for their largest difference: "max |diff| X",
	// "max |bf16 − f32| X", "mean |diff| M, max X".
	logLine  = regexp.MustCompile(`^\s+\S+_test\.go:[0-9]+: (.*)`)
	diffLine = regexp.MustCompile(`(?:max \|[^|]*\|:? |mean \|diff\| [0-9.eE+-]+, max )([0-9][0-9.eE+-]*|NaN)`)
)

// golden summarizes go test -test.v output: top-level tests passed,
// failed and skipped, for each failure its largest difference, the
// largest among the passes, and the tests that pattern names as a list
// (^(TestA|TestB)$ or ^TestA$) but did not run.
func golden(w io.Writer, path, pattern string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	var pass, fail, skip []string
	worst := map[string]float64{} // by top-level test
	said := map[string]string{}   // each top-level test's first log line
	cur := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "=== RUN") {
			if name := strings.Fields(line); len(name) == 3 {
				cur, _, _ = strings.Cut(name[2], "/")
			}
		}
		if m := diffLine.FindStringSubmatch(line); m != nil && cur != "" {
			v, err := strconv.ParseFloat(m[1], 64)
			if err != nil || math.IsNaN(v) {
				v = math.Inf(1)
			}
			worst[cur] = max(worst[cur], v)
		}
		if m := logLine.FindStringSubmatch(line); m != nil && cur != "" && said[cur] == "" {
			said[cur] = m[1]
		}
		m := testLine.FindStringSubmatch(line)
		if m == nil || m[1] != "" {
			continue
		}
		switch m[2] {
		case "PASS":
			pass = append(pass, m[3])
		case "FAIL":
			fail = append(fail, m[3])
		case "SKIP":
			skip = append(skip, m[3])
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	for _, t := range pass {
		fmt.Fprintf(w, "PASS %s (max abs diff %s)\n", t, diffText(worst, t))
	}
	var failed []string
	for _, t := range fail {
		why := "max abs diff " + diffText(worst, t)
		if _, ok := worst[t]; !ok && said[t] != "" {
			why = said[t]
			if r := []rune(why); len(r) > 100 {
				why = string(r[:100]) + "…"
			}
		}
		fmt.Fprintf(w, "FAIL %s (%s)\n", t, why)
		failed = append(failed, fmt.Sprintf("%s (%s)", t, why))
	}
	res := fmt.Sprintf("%d pass, %d fail, %d skip", len(pass), len(fail), len(skip))
	if len(failed) > 0 {
		res += ": " + strings.Join(failed, "; ")
	}
	best, bestName := -1.0, ""
	for _, t := range pass {
		if v, ok := worst[t]; ok && v > best {
			best, bestName = v, t
		}
	}
	if best >= 0 {
		res += fmt.Sprintf("; largest abs diff among passes %.3g (%s)", best, bestName)
	}
	if missing := notRun(pattern, slices.Concat(pass, fail, skip)); len(missing) > 0 {
		res += "; not run: " + strings.Join(missing, ", ")
	}
	if len(pass)+len(fail) == 0 {
		res = "no test ran (see the log)"
	}
	fmt.Fprintln(w, res)
	return nil
}

func diffText(worst map[string]float64, t string) string {
	v, ok := worst[t]
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.3g", v)
}

// poker prints the mean reward of each tenth of the run and the steps per
// second (steps over the sum of step_time).
func poker(w io.Writer, path string) error {
	ms, err := grpo.ReadMetrics(path)
	if err != nil {
		return err
	}
	var rewards []float64
	var seconds float64
	for _, m := range ms {
		if r, ok := m["reward"]; ok {
			rewards = append(rewards, r)
			seconds += m["step_time"]
		}
	}
	if len(rewards) == 0 {
		return fmt.Errorf("%s: no training steps", path)
	}
	parts := min(10, len(rewards))
	var curve []string
	for p := range parts {
		lo, hi := p*len(rewards)/parts, (p+1)*len(rewards)/parts
		sum := 0.0
		for _, r := range rewards[lo:hi] {
			sum += r
		}
		curve = append(curve, fmt.Sprintf("%.3f", sum/float64(hi-lo)))
	}
	fmt.Fprintf(w, "reward by tenth of the run: %s\n", strings.Join(curve, " "))
	fmt.Fprintf(w, "%d steps, %.2f steps/s, reward %s → %s\n", len(rewards), float64(len(rewards))/seconds, curve[0], curve[len(curve)-1])
	return nil
}

// stepResult is the part of bench/grpostep's -json and
// bench/hf_grpostep.py's output that step reads.
type stepResult struct {
	Variant      string  `json:"variant"`
	StepSeconds  float64 `json:"step_s"`
	FirstSeconds float64 `json:"first_step_s"`
	Generate     float64 `json:"generate_s"`
	Train        float64 `json:"train_s"`
	Decode       float64 `json:"decode_step_s"`
	DecodeBound  float64 `json:"decode_bound_s"`
	NewTokens    int     `json:"new_tokens"`
	Rows         int     `json:"rows"`
	Prompts      int     `json:"prompts"`
	G            int     `json:"g"`
}

func readStep(path string) (stepResult, error) {
	var r stepResult
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("%s: %w", path, err)
	}
	if r.Rows == 0 {
		r.Rows = r.Prompts * r.G
	}
	return r, nil
}

// step prints grpokit's step (and decode) figures beside the
// transformers + PEFT loop's.
func step(w io.Writer, paths []string) error {
	ours, err := readStep(paths[0])
	if err != nil {
		return err
	}
	parts := []string{fmt.Sprintf("grpokit %.3f s/step (%.3f steps/s; generate %.3f s, train %.3f s; first %.1f s)",
		ours.StepSeconds, 1/ours.StepSeconds, ours.Generate, ours.Train, ours.FirstSeconds)}
	if len(paths) == 2 {
		if hf, err := readStep(paths[1]); err != nil {
			parts = append(parts, "transformers+peft: "+err.Error())
		} else if hf.StepSeconds > 0 {
			parts = append(parts, fmt.Sprintf("transformers+peft %.3f s/step; speed-up %.2f×", hf.StepSeconds, hf.StepSeconds/ours.StepSeconds))
		}
	}
	if ours.Decode > 0 {
		parts = append(parts, fmt.Sprintf("decode at batch %d: %.2f ms/step, %.0f tokens/s, %.0f%% of the bandwidth bound (%.3f ms)",
			ours.Rows, 1e3*ours.Decode, float64(ours.Rows)/ours.Decode, 100*ours.DecodeBound/ours.Decode, 1e3*ours.DecodeBound))
	}
	fmt.Fprintln(w, strings.Join(slices.DeleteFunc(parts, func(s string) bool { return s == "" }), "; "))
	return nil
}

// notRun returns the names of a pattern written as ^(TestA|TestB)$ or
// ^TestA$ that are not in ran (nil for any other pattern).
func notRun(pattern string, ran []string) []string {
	p, ok := strings.CutPrefix(pattern, "^")
	if !ok {
		return nil
	}
	if p, ok = strings.CutSuffix(p, "$"); !ok {
		return nil
	}
	if q, ok := strings.CutPrefix(p, "("); ok {
		if p, ok = strings.CutSuffix(q, ")"); !ok {
			return nil
		}
	}
	var missing []string
	for _, name := range strings.Split(p, "|") {
		if !regexp.MustCompile(`^[A-Za-z0-9_]+$`).MatchString(name) {
			return nil
		}
		if !slices.Contains(ran, name) {
			missing = append(missing, name)
		}
	}
	return missing
}
