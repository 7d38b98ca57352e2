package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/model"
)

// write saves a two-tensor model (a 2-vector and a 1-vector) as dir's
// model.safetensors, or as a checkpoint's policy/model.safetensors.
func write(t *testing.T, dir string, checkpoint bool, a, b, c float32) string {
	t.Helper()
	p := dir
	if checkpoint {
		p = filepath.Join(dir, "policy")
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
	err := model.WriteSafetensors(filepath.Join(p, "model.safetensors"), []model.NamedTensor{
		{Name: "x", Shape: []int{2}, Data: []float32{a, b}},
		{Name: "y", Shape: []int{1}, Data: []float32{c}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestWalk(t *testing.T) {
	tmp := t.TempDir()
	w0 := write(t, filepath.Join(tmp, "warm-start"), false, 0, 0, 0)
	// A steady drift along x[0]: segments parallel, distance 3 then 6.
	d1 := write(t, filepath.Join(tmp, "drift", "checkpoint-100"), true, 3, 0, 0)
	d2 := write(t, filepath.Join(tmp, "drift", "checkpoint-200"), true, 6, 0, 0)
	// Orthogonal segments of length 3 and 4: distance 5, cosine 0.
	o1 := write(t, filepath.Join(tmp, "walk", "checkpoint-100"), true, 3, 0, 0)
	o2 := write(t, filepath.Join(tmp, "walk", "checkpoint-200"), true, 3, 0, 4)
	// Back the way it came: cosine −1.
	b2 := write(t, filepath.Join(tmp, "back", "checkpoint-200"), true, 1, 0, 0)

	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"drift", []string{w0, d1, d2}, []string{"3 weights", "6 ", "1.000", "4.243", "6\n"}},
		{"orthogonal", []string{w0, o1, o2}, []string{"5 ", "4 ", "0.000"}},
		{"reversal", []string{w0, d1, b2}, []string{"-1.000"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var out strings.Builder
			if err := run(c.args, &out); err != nil {
				t.Fatal(err)
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tmp := t.TempDir()
	w0 := write(t, filepath.Join(tmp, "a"), false, 0, 0, 0)
	other := filepath.Join(tmp, "b")
	if err := os.MkdirAll(other, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := model.WriteSafetensors(filepath.Join(other, "model.safetensors"), []model.NamedTensor{{Name: "x", Shape: []int{1}, Data: []float32{1}}}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"too few", []string{w0, w0}, "usage"},
		{"missing", []string{w0, w0, filepath.Join(tmp, "nope")}, "no model.safetensors"},
		{"shapes differ", []string{w0, w0, other}, "has 1 weights"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := run(c.args, &strings.Builder{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}
}
