package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/internal/backend"
	"github.com/grpokit/grpokit/internal/quant"
	"github.com/grpokit/grpokit/internal/regfile"
	"github.com/grpokit/grpokit/internal/vjp"
)

// Adapter adds a trainable term to the model's linear projections (LoRA is
// one). The model calls Delta for every projection while building a graph
// with adapters enabled; package model never imports an implementation.
type Adapter interface {
	// Delta returns the term added to module's output x·Wᵀ(+b), shaped like
	// that output, or nil when module has no adapter. module is the HF module
	// name ("model.layers.0.self_attn.q_proj"), x is [..., in], ctx is the
	// model's context at its root scope. Graph building: panics on error.
	Delta(ctx *mlctx.Context, module string, x *graph.Node) *graph.Node
}

// Options configure Load and New. A nil *Options means defaults.
type Options struct {
	// Backend runs the graphs; nil means the backend that
	// backend.ResolveFor("", params) names (SimpleGo, its ops side by side
	// for models of at most 50M parameters, unless GOMLX_BACKEND says
	// otherwise).
	Backend backends.Backend
	// WeightsFile is the safetensors file inside the directory to load;
	// "" means model.safetensors, else model.safetensors.index.json.
	WeightsFile string
	// Compute is the dtype the graphs compute in: Float32 (the zero value)
	// or BFloat16, as transformers under torch_dtype=bfloat16 (see
	// precision.go: norms, softmax and logits stay float32; trainable
	// variables stay float32 masters). ParseCompute reads it from a flag.
	Compute dtypes.DType
	// Logger receives the informational lines of Load and of the
	// packages that load into the model (e.g. that a multimodal
	// checkpoint's vision tower was skipped); nil means slog.Default().
	Logger *slog.Logger
	// Storage is how weights are held (see Storage): StorageF32 (the
	// default) for full fine-tuning; StorageAsStored, StorageBF16,
	// StorageNF4 or StorageInt8 for a frozen base (LoRA, QLoRA) or a
	// reference model. Load converts one tensor at a time, so the model
	// never exists in float32 as a whole.
	Storage Storage
	// DoubleQuant quantizes NF4's absmax again (bitsandbytes'
	// bnb_4bit_use_double_quant): about 0.4 fewer bits per weight.
	DoubleQuant bool
	// DecoderOnly makes Load read the decoder without lm_head.weight, as
	// a sequence-classification checkpoint (a decoder with a score head
	// instead of an LM head) is stored. Such a model gives hidden states
	// (HiddenRangeGraph); building its logits is an error.
	DecoderOnly bool
}

func (o *Options) storage() (Storage, bool) {
	if o == nil {
		return StorageF32, false
	}
	return o.Storage, o.DoubleQuant
}

func (o *Options) logger() *slog.Logger {
	if o != nil && o.Logger != nil {
		return o.Logger
	}
	return slog.Default()
}

// Logger returns the logger the model was made with (Options.Logger, else
// slog.Default()), for the packages that load into it.
func (m *Model) Logger() *slog.Logger {
	if m.logger == nil {
		return slog.Default()
	}
	return m.logger
}

// Model is a decoder (any supported family) whose weights live as variables of a GoMLX
// context, one per HF tensor (see ScopeOf). A Model is not safe for
// concurrent use.
type Model struct {
	cfg     Config
	backend backends.Backend
	ctx     *mlctx.Context
	adapter Adapter
	compute dtypes.DType // InvalidDType means Float32
	storage Storage
	logger  *slog.Logger
	// decoderOnly: loaded without an LM head (Options.DecoderOnly).
	decoderOnly bool

	mu    sync.Mutex
	execs map[string]*mlctx.Exec
}

func newEmpty(cfg Config, opts *Options) (*Model, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var compute dtypes.DType
	if opts != nil {
		var err error
		if compute, err = checkCompute(opts.Compute); err != nil {
			return nil, err
		}
	}
	vjp.Register()
	if opts != nil {
		if _, err := ParseStorage(string(opts.Storage)); err != nil {
			return nil, err
		}
	}
	var b backends.Backend
	if opts != nil && opts.Backend != nil {
		b = opts.Backend
	} else {
		var err error
		// Small models run their ops side by side (backend.ResolveFor).
		if b, err = backend.New(backend.ResolveFor("", cfg.NumParams())); err != nil {
			return nil, fmt.Errorf("model: %w", err)
		}
	}
	s, _ := opts.storage()
	return &Model{cfg: cfg, backend: b, ctx: mlctx.New(), execs: map[string]*mlctx.Exec{}, compute: compute, storage: s, logger: opts.logger(),
		decoderOnly: opts != nil && opts.DecoderOnly}, nil
}

// New returns a model with random weights for cfg (normal with std 0.02 as
// HF's initializer_range, norms at 1 — a (1+w) norm's w at 0 — biases 0),
// drawn from seed. It
// registers the fast DotGeneral gradient (internal/vjp) for the process.
func New(cfg Config, seed uint64, opts *Options) (*Model, error) {
	m, err := newEmpty(cfg, opts)
	if err != nil {
		return nil, err
	}
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	for _, w := range m.cfg.Weights() {
		n := 1
		for _, d := range w.Shape {
			n *= d
		}
		data := make([]float32, n)
		switch {
		case len(w.Shape) == 1 && !isBias(w.Name):
			if m.cfg.arch().norm == normW {
				for i := range data {
					data[i] = 1
				}
			}
		case isBias(w.Name):
		default:
			for i := range data {
				data[i] = float32(0.02 * r.NormFloat64())
			}
		}
		st, dq := opts.storage()
		if err := m.storeAs(w.Name, data, w.Shape, st.formatFor(w.Name, w.Shape, "F32"), dq); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func isBias(name string) bool { return filepath.Ext(name) == ".bias" }

// Load reads config.json and the safetensors weights (F32, BF16 or F16,
// single file or sharded with model.safetensors.index.json) from dir. All
// problems with the weights are reported together. It registers the fast
// DotGeneral gradient (internal/vjp) for the process.
func Load(dir string, opts *Options) (*Model, error) {
	cfg, err := ReadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	if err := CheckWeightsHeader(dir, cfg, opts); err != nil {
		return nil, err
	}
	m, err := newEmpty(cfg, opts)
	if err != nil {
		return nil, err
	}
	files, err := weightFiles(dir, opts)
	if err != nil {
		return nil, err
	}
	// where maps each canonical name to its file and the name in that file
	// (a multimodal checkpoint's language_model.model.X is model.X).
	type loc struct {
		f    *safetensorsFile
		name string
	}
	where := map[string]loc{}
	skipped := 0
	for _, path := range files {
		s, err := openSafetensors(path)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		for name := range s.header.Tensors {
			canon, vision := cfg.CanonicalName(name)
			if vision {
				skipped++
				continue
			}
			where[canon] = loc{s, name}
		}
	}
	if skipped > 0 {
		opts.logger().Info("model: loading the language model only; skipped the vision tower and projector", "dir", dir, "tensors", skipped)
	}
	var errs []error
	var scratch []float32 // the values of the tensor being quantized
	for _, w := range cfg.Weights() {
		if m.decoderOnly && w.Name == "lm_head.weight" {
			continue
		}
		l, ok := where[w.Name]
		if !ok {
			errs = append(errs, &WeightError{Name: w.Name, Want: w.Shape})
			continue
		}
		if got := l.f.header.Tensors[l.name].Shape; !slices.Equal(got, w.Shape) {
			errs = append(errs, &WeightError{Name: w.Name, Want: w.Shape, Got: got})
			continue
		}
		st, dq := opts.storage()
		format := st.formatFor(w.Name, w.Shape, l.f.header.Tensors[l.name].DType)
		if format == "f32" || format == "bf16" {
			// Straight into the held tensor: no whole-tensor copies.
			if err := m.loadDirect(w.Name, l.f, l.name, format); err != nil {
				errs = append(errs, err)
			}
			continue
		}
		data, err := l.f.readF32Into(l.name, scratch)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		scratch = data // storeAs keeps no reference to data
		if err := m.storeAs(w.Name, data, w.Shape, format, dq); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("model: load %s: %w", dir, errors.Join(errs...))
	}
	return m, nil
}

// ReadTensor reads one tensor of the checkpoint in dir (model.safetensors,
// or the shard model.safetensors.index.json names for it) as float32, with
// its shape: a weight a Model does not hold, such as a sequence
// classifier's score.weight.
func ReadTensor(dir, name string) ([]float32, []int, error) {
	files, err := weightFiles(dir, nil)
	if err != nil {
		return nil, nil, err
	}
	for _, path := range files {
		s, err := openSafetensors(path)
		if err != nil {
			return nil, nil, err
		}
		if _, ok := s.header.Tensors[name]; ok {
			data, shape, err := s.readF32(name)
			s.Close()
			return data, shape, err
		}
		s.Close()
	}
	return nil, nil, fmt.Errorf("model: %s: no tensor %q in %d safetensors file(s)", dir, name, len(files))
}

// weightFiles lists the safetensors files to read from dir.
func weightFiles(dir string, opts *Options) ([]string, error) {
	if opts != nil && opts.WeightsFile != "" {
		return []string{filepath.Join(dir, opts.WeightsFile)}, nil
	}
	single := filepath.Join(dir, "model.safetensors")
	if _, err := os.Stat(single); err == nil {
		return []string{single}, nil
	}
	index := filepath.Join(dir, "model.safetensors.index.json")
	data, err := regfile.ReadFile(index, regfile.MaxMeta)
	if err != nil {
		for _, f := range []string{"pytorch_model.bin", "pytorch_model.bin.index.json", "model.pt", "consolidated.00.pth"} {
			if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
				return nil, fmt.Errorf("model: %s: %w; it has %s, PyTorch's format, which grpokit does not read: write safetensors "+
					"with transformers (AutoModelForCausalLM.from_pretrained(dir).save_pretrained(dir, safe_serialization=True))", dir, errNoWeights, f)
			}
		}
		return nil, fmt.Errorf("model: %s: %w", dir, errNoWeights)
	}
	var idx struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		return nil, fmt.Errorf("model: parse %s: %w", index, err)
	}
	var files []string
	for _, f := range idx.WeightMap {
		if filepath.Base(f) != f {
			return nil, fmt.Errorf("model: %s: shard name %q is not a plain file name", index, f)
		}
		p := filepath.Join(dir, f)
		if !slices.Contains(files, p) {
			files = append(files, p)
		}
	}
	slices.Sort(files)
	if len(files) == 0 {
		return nil, fmt.Errorf("model: %s: empty weight_map", index)
	}
	return files, nil
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Backend returns the GoMLX backend the model runs on.
func (m *Model) Backend() backends.Backend { return m.backend }

// Context returns the GoMLX context holding the weights (and any adapter's
// variables). Graph builders must be given this context (or one derived
// from it with In/Reuse), e.g. by an mlctx.Exec built on it.
func (m *Model) Context() *mlctx.Context { return m.ctx }

// SetAdapter attaches a (nil: detaches the) adapter; graphs built by the
// model afterwards, generation included, use it.
func (m *Model) SetAdapter(a Adapter) {
	m.adapter = a
	m.resetExecs()
}

// Adapter returns the attached adapter, or nil.
func (m *Model) Adapter() Adapter { return m.adapter }

func (m *Model) resetExecs() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, e := range m.execs {
		e.Finalize()
	}
	m.execs = map[string]*mlctx.Exec{}
}

// Weight returns a copy of HF tensor name as float32 values and its shape;
// a tied lm_head.weight returns the embedding. Low-precision weights are
// widened (or dequantized).
func (m *Model) Weight(name string) ([]float32, []int, error) {
	for n := name; ; {
		shape := m.specShape(n)
		if shape != nil {
			data, ok, err := m.hostWeight(n, shape)
			if err != nil {
				return nil, nil, fmt.Errorf("model: weight %q: %w", name, err)
			}
			if ok {
				return data, slices.Clone(shape), nil
			}
		}
		alt, ok := tiedFallback[n]
		if !ok {
			return nil, nil, fmt.Errorf("model: no weight %q", name)
		}
		n = alt
	}
}

// WeightShape returns the shape of HF tensor name (tied fallback applied)
// without copying it.
func (m *Model) WeightShape(name string) ([]int, error) {
	for n := name; ; {
		if s := m.specShape(n); s != nil && m.formatOf(n) != "" {
			return slices.Clone(s), nil
		}
		alt, ok := tiedFallback[n]
		if !ok {
			return nil, fmt.Errorf("model: no weight %q", name)
		}
		n = alt
	}
}

// specShape returns the shape Config.Weights gives name, or nil.
func (m *Model) specShape(name string) []int {
	for _, w := range m.cfg.Weights() {
		if w.Name == name {
			return w.Shape
		}
	}
	return nil
}

// SetWeight replaces HF tensor name (same shape), keeping its storage
// format, and recompiles nothing: graphs read weights as variables. A
// weight held in a GGUF file's blocks (StorageGGUF), which cannot be made
// again from other values without a second rounding, becomes a frozen
// float32 weight instead (and compiled graphs are dropped).
func (m *Model) SetWeight(name string, data []float32, shape []int) error {
	for n := name; ; {
		if f := m.formatOf(n); f != "" {
			if want := m.specShape(n); !slices.Equal(want, shape) {
				return &WeightError{Name: name, Want: want, Got: shape}
			}
			if _, blocks := quant.ParseGGML(f); blocks {
				if err := m.storeAs(n, data, shape, "f32", false); err != nil {
					return err
				}
				if v := m.variable(n); v != nil {
					v.SetTrainable(false)
				}
				m.resetExecs()
				return nil
			}
			return m.storeAs(n, data, shape, f, false)
		}
		alt, ok := tiedFallback[n]
		if !ok {
			return fmt.Errorf("model: no weight %q", name)
		}
		n = alt
	}
}

// variable returns the variable for an HF tensor name (with the tied
// fallback), or nil.
func (m *Model) variable(name string) *mlctx.Variable {
	for {
		scope, v, err := ScopeOf(name)
		if err != nil {
			return nil
		}
		if x := m.ctx.GetVariableByScopeAndName(scope, v); x != nil {
			return x
		}
		alt, ok := tiedFallback[name]
		if !ok {
			return nil
		}
		name = alt
	}
}

// BaseVariables returns the model's own float32 weights (not an adapter's,
// nor low-precision ones, which never train), in the order of
// Config.Weights.
func (m *Model) BaseVariables() []*mlctx.Variable {
	var out []*mlctx.Variable
	for _, w := range m.cfg.Weights() {
		if v := m.variable(w.Name); v != nil && v.Shape().DType == dtypes.Float32 {
			out = append(out, v)
		}
	}
	return out
}

// SetBaseTrainable marks the base weights trainable (full fine-tuning) or
// frozen (adapters only). New and Load leave them trainable.
func (m *Model) SetBaseTrainable(trainable bool) {
	for _, v := range m.BaseVariables() {
		v.SetTrainable(trainable)
	}
}

// TrainableVariables returns every trainable variable in the model's
// context: all weights for full fine-tuning, only adapter variables once
// the base is frozen (lora.Attach freezes it).
func (m *Model) TrainableVariables() []*mlctx.Variable {
	var out []*mlctx.Variable
	for v := range m.ctx.IterVariables() {
		if v.Trainable {
			out = append(out, v)
		}
	}
	return out
}

// Save writes the model in HF layout to dir: config.json and a single F32
// model.safetensors (adapters are not included; lora merges them).
func (m *Model) Save(dir string) error {
	if err := SaveConfig(dir, m.cfg, "F32"); err != nil {
		return err
	}
	// One weight copied at a time, not a second copy of the model.
	return WriteSafetensorsFunc(filepath.Join(dir, "model.safetensors"), m.cfg.Weights(), "F32", func(name string) ([]float32, error) {
		data, _, err := m.Weight(name)
		return data, err
	})
}

// SaveHF writes cfg as config.json and ts as model.safetensors (F32) into
// dir, creating it: the layout Load reads and transformers loads.
func SaveHF(dir string, cfg Config, ts []NamedTensor) error {
	if err := SaveConfig(dir, cfg, "F32"); err != nil {
		return err
	}
	return WriteSafetensors(filepath.Join(dir, "model.safetensors"), ts)
}

// SaveConfig writes cfg as dir/config.json (dir is made if needed), for
// weights written apart (WriteSafetensorsFunc) in safetensors dtype
// fileDType ("F32", "BF16" or "F16"), which torch_dtype names.
func SaveConfig(dir string, cfg Config, fileDType string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	cfgJSON, err := cfg.hfJSON(fileDType)
	if err != nil {
		return fmt.Errorf("model: encode config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfgJSON, 0o644); err != nil {
		return fmt.Errorf("model: %w", err)
	}
	return nil
}

// NumParams returns the number of scalar weights (tied embeddings counted once).
func (m *Model) NumParams() int { return int(m.cfg.NumParams()) }
