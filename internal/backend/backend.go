// Package backend is the one place where grpokit picks a GoMLX backend.
//
// The pure-Go backend ("go", GoMLX's SimpleGo) is the embedded default and
// works on every machine. The XLA backend ("xla", "xla:cpu", "xla:cuda") is
// used when asked for by name or through GOMLX_BACKEND and its PJRT plugin is
// installed; grpokit never downloads a plugin.
package backend

import (
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
)

// EnvVar is the environment variable that names the backend when the caller
// gives none; it is GoMLX's own.
const EnvVar = backends.ConfigEnvVar

// DefaultGo is the configuration of the pure-Go backend used when none is
// given: ops run one at a time and each op uses the cores itself.
//
// Why not side by side ("go:ops_parallel", or SimpleGo's "dynamic"
// default, which New makes safe: see workers.go)? It fills the core that
// one op at a time leaves idle (the GRPO step's training part kept both
// cores busy 69–73% of its ops' time one at a time, 79–84% side by side;
// training wall about 10% shorter), but it runs every ready op as soon as
// it can: a Llama-3.2-1B NF4 LoRA step with gradient checkpointing
// (bench/memory) peaked at 7.51 GB side by side against 2.40 GB one at a
// time (plan 2.38 GB). The ops that depend on weights alone (every layer's
// dequantization) are all ready at the start, the likely cause. Sequential
// order keeps the memory plan.
const DefaultGo = simplego.BackendName + ":ops_sequential"

// DefaultGoSmall is the pure-Go configuration ResolveFor picks for models
// of at most SmallModelParams parameters: ops side by side. Their ops are
// too small for one op to keep both cores busy, and the memory side by
// side costs (about one float32 copy of the weights at worst, see
// DefaultGo) is at most a few hundred MB. On a 2-core CPU the Wordle
// study's tiny model (222,080 parameters) runs a supervised step in 0.04 s
// instead of 0.06, with the same losses.
const DefaultGoSmall = simplego.BackendName + ":ops_parallel"

// SmallModelParams is the largest model, in parameters, that runs its ops
// side by side by default (DefaultGoSmall): 50 million, about 200 MB of
// float32 weights.
const SmallModelParams = 50_000_000

var (
	mu    sync.Mutex
	cache = map[string]backends.Backend{}
)

// Resolve returns the configuration string that New would use for name:
// name itself, else $GOMLX_BACKEND, else DefaultGo.
func Resolve(name string) string {
	name, pureGo := named(name)
	if pureGo {
		return DefaultGo
	}
	return name
}

// named returns the configuration name asks for (name, else
// $GOMLX_BACKEND) and whether it leaves the choice to grpokit: empty or
// plain "go", the pure-Go backend with no options.
func named(name string) (string, bool) {
	if name == "" {
		name = os.Getenv(EnvVar)
	}
	return name, name == "" || name == simplego.BackendName
}

// ResolveFor is Resolve for a model of params parameters: when neither name
// nor $GOMLX_BACKEND names a configuration (or either says only "go"), a
// model of at most SmallModelParams parameters gets DefaultGoSmall and a
// larger one DefaultGo.
func ResolveFor(name string, params int64) string {
	if _, pureGo := named(name); pureGo && params <= SmallModelParams {
		return DefaultGoSmall
	}
	return Resolve(name)
}

// New returns the backend named by config (see Resolve). Backends are cached
// per configuration, so every caller in a process shares one. The error names
// the backend that could not be made and why (for XLA, usually a missing
// PJRT plugin).
func New(config string) (b backends.Backend, err error) {
	config = Resolve(config)
	mu.Lock()
	defer mu.Unlock()
	if b, ok := cache[config]; ok {
		return b, nil
	}
	name, _, _ := strings.Cut(config, ":")
	switch name {
	case simplego.BackendName:
	case "xla", "stablehlo", "shlo", "hlo":
		if !xlaCompiledIn {
			return nil, fmt.Errorf("backend: %q is not compiled into this program (it needs cgo; build with CGO_ENABLED=1 and without the noxla tag)", config)
		}
	default:
		return nil, fmt.Errorf("backend: unknown backend %q (want %q or %q)", config, simplego.BackendName, "xla[:cpu|:cuda]")
	}
	defer func() {
		// GoMLX reports some failures by panicking; turn them into errors.
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("backend: %q: %v", config, r)
		}
	}()
	if name == simplego.BackendName {
		installGemm()      // fast f32 DotGeneral; see simplego_gemm.go
		installFastOps()   // fast f32 broadcasting ops; see simplego_elementwise.go
		installRoundBF16() // bf16 ops in f32, rounded to nearest even; see simplego_bf16.go
		installOpTrace()   // only after EnableOpTrace; see optrace.go
	}
	b, err = backends.NewWithConfig(config)
	if err != nil {
		if name != simplego.BackendName {
			return nil, fmt.Errorf("backend: %q is not available (is its PJRT plugin installed? see docs/backends.md): %w", config, err)
		}
		return nil, fmt.Errorf("backend: %q: %w", config, err)
	}
	if name == simplego.BackendName && !givesParallelism(config) {
		if err := unlimitWorkers(b); err != nil {
			return nil, fmt.Errorf("backend: %q: %w", config, err)
		}
	}
	cache[config] = b
	return b, nil
}

// Must is New for tests and examples: it panics on error.
func Must(config string) backends.Backend {
	b, err := New(config)
	if err != nil {
		panic(err)
	}
	return b
}

// IsGo reports whether b is the pure-Go backend (SimpleGo), whose buffers
// are Go slices that BufferData returns without a copy.
func IsGo(b backends.Backend) bool {
	_, ok := b.(*simplego.Backend)
	return ok
}
