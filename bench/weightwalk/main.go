// Command weightwalk says whether a training run's weight updates share a
// direction: given the weights at three or more points of a run (the warm
// start, then checkpoints), it prints each point's L2 distance from the
// first, each segment's length, and the cosine between consecutive
// segments. A steady drift gives cosines near 1 and distances that grow
// with the number of steps; updates that are mostly noise give cosines
// near 0 and distances that grow with its square root (Adam moves every
// weight by about the learning rate each step, whatever the gradient).
//
//	go run ./bench/weightwalk runs/wordle/warm-start runs/wordle/checkpoint-100 runs/wordle/checkpoint-200
//
// Each argument is a model.safetensors file, a model folder, or a trainer
// checkpoint (whose policy/ folder holds the weights). When the arguments'
// names end in their step ("checkpoint-147"; the first point counts as step
// 0 unless it names one), it also prints what a random walk (√T) and a
// steady drift (T) would predict for each distance from the second point's.
// research/wordle/README.md reads a GRPO run with it.
package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/grpokit/grpokit/model"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "weightwalk:", err)
		os.Exit(1)
	}
}

func run(args []string, w io.Writer) error {
	if len(args) < 3 {
		return errors.New("usage: weightwalk W0 W1 W2 [W3 …] (safetensors files, model folders or checkpoints)")
	}
	points := make([][]float64, len(args))
	for i, a := range args {
		p, err := weightsPath(a)
		if err != nil {
			return err
		}
		if points[i], err = flatten(p); err != nil {
			return err
		}
		if len(points[i]) != len(points[0]) {
			return fmt.Errorf("%s has %d weights, %s has %d", args[i], len(points[i]), args[0], len(points[0]))
		}
	}
	steps := stepsOf(args)
	fmt.Fprintf(w, "%d weights\n", len(points[0]))
	fmt.Fprintf(w, "%-40s %12s %12s %12s %10s\n", "point", "|w - w0|", "rms", "|segment|", "cos(prev)")
	for i := 1; i < len(points); i++ {
		seg := diff(points[i], points[i-1])
		cos := "-"
		if i > 1 {
			cos = fmt.Sprintf("%.3f", cosine(diff(points[i-1], points[i-2]), seg))
		}
		d := norm(diff(points[i], points[0]))
		fmt.Fprintf(w, "%-40s %12.4g %12.3e %12.4g %10s\n", args[i], d, d/math.Sqrt(float64(len(points[0]))), norm(seg), cos)
	}
	if steps != nil && steps[1] > steps[0] {
		d1 := norm(diff(points[1], points[0]))
		fmt.Fprintf(w, "\npredicted from %s (step %d):\n%-40s %12s %12s %12s\n", args[1], steps[1], "point", "measured", "random walk", "drift")
		for i := 2; i < len(points); i++ {
			r := float64(steps[i]-steps[0]) / float64(steps[1]-steps[0])
			fmt.Fprintf(w, "%-40s %12.4g %12.4g %12.4g\n", args[i], norm(diff(points[i], points[0])), d1*math.Sqrt(r), d1*r)
		}
	}
	return nil
}

// weightsPath finds the safetensors file behind a file, model folder or
// trainer checkpoint.
func weightsPath(arg string) (string, error) {
	for _, p := range []string{arg, filepath.Join(arg, "model.safetensors"), filepath.Join(arg, "policy", "model.safetensors")} {
		if st, err := os.Stat(p); err == nil && !st.IsDir() {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: no model.safetensors (nor policy/model.safetensors)", arg)
}

// flatten reads every tensor of a safetensors file, in name order, into one
// vector.
func flatten(path string) ([]float64, error) {
	ts, err := model.ReadSafetensors(path)
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, t := range ts {
		for _, v := range t.Data {
			out = append(out, float64(v))
		}
	}
	return out, nil
}

var stepRe = regexp.MustCompile(`(\d+)/*$`)

// stepsOf reads each argument's step from the digits its name ends in; the
// first argument is step 0 when it names none. It returns nil when a later
// argument names no step.
func stepsOf(args []string) []int {
	steps := make([]int, len(args))
	for i, a := range args {
		m := stepRe.FindStringSubmatch(a)
		if m == nil {
			if i == 0 {
				continue
			}
			return nil
		}
		steps[i], _ = strconv.Atoi(m[1])
	}
	return steps
}

func diff(a, b []float64) []float64 {
	d := make([]float64, len(a))
	for i := range a {
		d[i] = a[i] - b[i]
	}
	return d
}

func norm(a []float64) float64 { return math.Sqrt(dot(a, a)) }

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func cosine(a, b []float64) float64 {
	n := norm(a) * norm(b)
	if n == 0 {
		return 0
	}
	return dot(a, b) / n
}
