package backend

import (
	"strings"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
)

func TestResolve(t *testing.T) {
	t.Setenv(EnvVar, "")
	for _, tc := range []struct{ in, want string }{
		{"", DefaultGo},
		{"go", DefaultGo},
		{"go:parallelism=2", "go:parallelism=2"},
		{"xla:cpu", "xla:cpu"},
	} {
		if got := Resolve(tc.in); got != tc.want {
			t.Errorf("Resolve(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	t.Setenv(EnvVar, "xla:cuda")
	if got := Resolve(""); got != "xla:cuda" {
		t.Errorf("Resolve with env = %q", got)
	}
}

func TestResolveFor(t *testing.T) {
	for _, tc := range []struct {
		env, in string
		params  int64
		want    string
	}{
		{"", "", 222_080, DefaultGoSmall}, // the Wordle example's tiny model
		{"", "", SmallModelParams, DefaultGoSmall},
		{"", "", SmallModelParams + 1, DefaultGo},
		{"", "", 1_235_814_400, DefaultGo}, // Llama-3.2-1B
		{"", "go", 1000, DefaultGoSmall},
		{"go", "", 1000, DefaultGoSmall},
		{"", "go:ops_sequential", 1000, "go:ops_sequential"},
		{"go:ops_sequential", "", 1000, "go:ops_sequential"},
		{"xla:cpu", "", 1000, "xla:cpu"},
		{"", "xla:cuda", 1000, "xla:cuda"},
		{"xla:cpu", "go", 1000, DefaultGoSmall}, // a name given wins over the environment
	} {
		t.Setenv(EnvVar, tc.env)
		if got := ResolveFor(tc.in, tc.params); got != tc.want {
			t.Errorf("GOMLX_BACKEND=%q ResolveFor(%q, %d) = %q, want %q", tc.env, tc.in, tc.params, got, tc.want)
		}
	}
}

func TestNewDefaultComputes(t *testing.T) {
	t.Setenv(EnvVar, "")
	b, err := New("")
	if err != nil {
		t.Fatal(err)
	}
	got := graph.MustExecOnce(b, func(x *graph.Node) *graph.Node {
		return graph.Dot(x, x)
	}, [][]float32{{1, 2}, {3, 4}})
	want := [][]float32{{7, 10}, {15, 22}}
	if v := got.Value().([][]float32); v[0][0] != want[0][0] || v[1][1] != want[1][1] {
		t.Fatalf("got %v, want %v", v, want)
	}
}

func TestNewErrors(t *testing.T) {
	for _, tc := range []struct{ config, want string }{
		{"nosuch", "unknown backend"},
		{"xla:nosuchplugin", map[bool]string{true: "not available", false: "not compiled into this program"}[xlaCompiledIn]},
	} {
		_, err := New(tc.config)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%q) error = %v, want it to contain %q", tc.config, err, tc.want)
		}
	}
}
