package lora

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"

	. "github.com/gomlx/gomlx/pkg/core/graph"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/grpokit/grpokit/model"
)

// Config describes LoRA adapters; field meanings follow PEFT's LoraConfig.
type Config struct {
	// R is the rank r (PEFT "r"); required, > 0.
	R int
	// Alpha is lora_alpha; the update is scaled by Alpha/R (or
	// Alpha/sqrt(R) with RSLoRA). 0 means Alpha = R (scaling 1).
	Alpha float64
	// Dropout is lora_dropout, applied to the adapter's input while
	// training (ctx.IsTraining); 0 means none.
	Dropout float64
	// RSLoRA is use_rslora: scale by Alpha/sqrt(R).
	RSLoRA bool
	// TargetModules are short projection names (PEFT target_modules) among
	// q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj.
	// nil means q_proj and v_proj (PEFT's default for Llama and Qwen2).
	TargetModules []string
	// Seed draws the initial A matrices (B starts at zero).
	Seed uint64
	// Quantize is how the frozen base holds its projection weights, as
	// QLoRA does with bitsandbytes: "nf4" is BitsAndBytesConfig(
	// load_in_4bit=True, bnb_4bit_quant_type="nf4"), "int8" is
	// load_in_8bit=True, "bf16" keeps bfloat16, "" leaves the model's
	// storage as it is (see model.Storage; products always run in
	// float32, bnb_4bit_compute_dtype=float32). Attach converts a model
	// that holds another format; loading with model.Options.Storage set
	// to the same value avoids ever holding the float32 model.
	Quantize string
	// DoubleQuant is bnb_4bit_use_double_quant (NF4 only).
	DoubleQuant bool
}

// Scaling returns the factor of B·A: Alpha/R, or Alpha/sqrt(R) with RSLoRA.
func (c Config) Scaling() float64 {
	alpha := c.Alpha
	if alpha == 0 {
		alpha = float64(c.R)
	}
	if c.RSLoRA {
		return alpha / math.Sqrt(float64(c.R))
	}
	return alpha / float64(c.R)
}

func (c Config) targets() []string {
	if c.TargetModules == nil {
		return []string{"q_proj", "v_proj"}
	}
	return c.TargetModules
}

// Validate reports every invalid field at once.
func (c Config) Validate() error {
	var errs []error
	if c.R <= 0 {
		errs = append(errs, fmt.Errorf("lora: r = %d, want > 0", c.R))
	}
	if c.Alpha < 0 {
		errs = append(errs, fmt.Errorf("lora: lora_alpha = %g, want >= 0", c.Alpha))
	}
	if c.Dropout < 0 || c.Dropout >= 1 {
		errs = append(errs, fmt.Errorf("lora: lora_dropout = %g, want in [0, 1)", c.Dropout))
	}
	if s, err := model.ParseStorage(c.Quantize); err != nil {
		errs = append(errs, fmt.Errorf("lora: quantize: %w", err))
	} else if s == model.StorageAsStored {
		errs = append(errs, fmt.Errorf("lora: quantize %q: want nf4, int8, bf16 or empty", c.Quantize))
	}
	if c.TargetModules != nil && len(c.TargetModules) == 0 {
		errs = append(errs, errors.New("lora: target_modules is empty"))
	}
	for _, t := range c.targets() {
		if !slices.ContainsFunc(model.Projections(), func(p model.Projection) bool { return p.Short == t }) {
			errs = append(errs, fmt.Errorf("lora: unknown target module %q (want q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj or down_proj)", t))
		}
	}
	return errors.Join(errs...)
}

// Adapter holds LoRA matrices for some projections of one model. Its
// variables live in the model's context next to the weight they adapt:
// module M gets scopes M/lora_A and M/lora_B (variable "weight"), so the HF
// name M.lora_A.weight maps through model.ScopeOf like any weight.
type Adapter struct {
	m       *model.Model
	cfg     Config
	modules []string // HF module names, in model order
}

var _ model.Adapter = (*Adapter)(nil)

// Attach adds fresh adapters (A Kaiming-uniform as PEFT, B = 0, so the
// model's output is unchanged) to cfg.TargetModules of every layer,
// freezes the base weights and attaches the adapter to m, replacing any
// other. Generation and LogitsGraph then use it.
func Attach(m *model.Model, cfg Config) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if s, _ := model.ParseStorage(cfg.Quantize); s != model.StorageF32 && s != m.Storage() {
		if err := m.SetStorage(s, cfg.DoubleQuant); err != nil {
			return nil, fmt.Errorf("lora: %w", err)
		}
	}
	a := &Adapter{m: m, cfg: cfg}
	for i := range m.Config().NumHiddenLayers {
		for _, p := range model.Projections() {
			if slices.Contains(cfg.targets(), p.Short) {
				a.modules = append(a.modules, fmt.Sprintf("model.layers.%d.%s", i, p.Module))
			}
		}
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x10ea))
	for _, mod := range a.modules {
		shape, err := m.WeightShape(mod + ".weight")
		if err != nil {
			return nil, fmt.Errorf("lora: %w", err)
		}
		out, in := shape[0], shape[1]
		// PEFT: kaiming_uniform_(A, a=sqrt(5)) → U(-1/sqrt(in), 1/sqrt(in)).
		bound := 1 / math.Sqrt(float64(in))
		aData := make([]float32, cfg.R*in)
		for i := range aData {
			aData[i] = float32((2*r.Float64() - 1) * bound)
		}
		if err := a.setVar(mod+".lora_A.weight", aData, []int{cfg.R, in}); err != nil {
			return nil, err
		}
		if err := a.setVar(mod+".lora_B.weight", make([]float32, out*cfg.R), []int{out, cfg.R}); err != nil {
			return nil, err
		}
	}
	m.SetBaseTrainable(false)
	m.SetAdapter(a)
	return a, nil
}

// setVar creates or overwrites an adapter variable (trainable).
func (a *Adapter) setVar(name string, data []float32, shape []int) error {
	scope, v, err := model.ScopeOf(name)
	if err != nil {
		return fmt.Errorf("lora: %w", err)
	}
	ctx := a.m.Context()
	t := tensors.FromFlatDataAndDimensions(data, shape...)
	if old := ctx.GetVariableByScopeAndName(scope, v); old != nil {
		if !slices.Equal(old.Shape().Dimensions, shape) {
			return fmt.Errorf("lora: %s has shape %v, want %v", name, shape, old.Shape().Dimensions)
		}
		return old.SetValue(t)
	}
	ctx.InAbsPath(scope).VariableWithValue(v, t).SetTrainable(true)
	return nil
}

// Config returns the adapter's configuration.
func (a *Adapter) Config() Config { return a.cfg }

// Modules returns the HF names of the adapted modules.
func (a *Adapter) Modules() []string { return slices.Clone(a.modules) }

// Variables returns the adapter's A and B variables (what the trainer
// optimizes), A then B for each module in model order.
func (a *Adapter) Variables() []*mlctx.Variable {
	var out []*mlctx.Variable
	for _, mod := range a.modules {
		for _, ab := range []string{".lora_A.weight", ".lora_B.weight"} {
			scope, v, _ := model.ScopeOf(mod + ab)
			out = append(out, a.m.Context().GetVariableByScopeAndName(scope, v))
		}
	}
	return out
}

// Delta implements model.Adapter: scaling · B(A·dropout(x)) for adapted
// modules, nil for others, computed in the adapter's float32 whatever x's
// dtype (a bf16 model adds it in float32 and casts back, as PEFT). Graph
// building: panics on error.
func (a *Adapter) Delta(ctx *mlctx.Context, module string, x *graph.Node) *graph.Node {
	if !slices.Contains(a.modules, module) {
		return nil
	}
	g := x.Graph()
	get := func(suffix string) *Node {
		scope, v, err := model.ScopeOf(module + suffix)
		if err != nil {
			panic(err)
		}
		vr := ctx.InAbsPath(scope).GetVariable(v)
		if vr == nil {
			panic(fmt.Errorf("lora: variable for %s%s is not in the context", module, suffix))
		}
		return vr.ValueGraph(g)
	}
	A := get(".lora_A.weight")
	// PEFT casts the input to the adapter's dtype (float32 masters even in a
	// bf16 model: autocast_adapter_dtype); the model casts the sum back.
	x = ConvertDType(x, A.DType())
	if a.cfg.Dropout > 0 {
		x = dropout(ctx, x, a.cfg.Dropout)
	}
	last := x.Rank() - 1
	h := DotGeneral(x, []int{last}, nil, A, []int{1}, nil)
	h = DotGeneral(h, []int{last}, nil, get(".lora_B.weight"), []int{1}, nil)
	return MulScalar(h, a.cfg.Scaling())
}

// matrices returns module's A [r, in] and B [out, r] values.
func (a *Adapter) matrices(module string) (A, B []float32, in, out int, err error) {
	A, sa, err := a.value(module + ".lora_A.weight")
	if err != nil {
		return nil, nil, 0, 0, err
	}
	B, sb, err := a.value(module + ".lora_B.weight")
	if err != nil {
		return nil, nil, 0, 0, err
	}
	return A, B, sa[1], sb[0], nil
}

func (a *Adapter) value(name string) ([]float32, []int, error) {
	scope, v, err := model.ScopeOf(name)
	if err != nil {
		return nil, nil, fmt.Errorf("lora: %w", err)
	}
	vr := a.m.Context().GetVariableByScopeAndName(scope, v)
	if vr == nil {
		return nil, nil, fmt.Errorf("lora: no variable for %s", name)
	}
	t, err := vr.Value()
	if err != nil {
		return nil, nil, fmt.Errorf("lora: %s: %w", name, err)
	}
	data, err := tensors.CopyFlatData[float32](t)
	if err != nil {
		return nil, nil, fmt.Errorf("lora: %s: %w", name, err)
	}
	return data, slices.Clone(t.Shape().Dimensions), nil
}

// merged returns W + scaling·B·A for module (accumulated in float64).
func (a *Adapter) merged(module string) ([]float32, []int, error) {
	W, shape, err := a.m.Weight(module + ".weight")
	if err != nil {
		return nil, nil, fmt.Errorf("lora: %w", err)
	}
	A, B, in, out, err := a.matrices(module)
	if err != nil {
		return nil, nil, err
	}
	r, s := a.cfg.R, a.cfg.Scaling()
	// W is a copy (Model.Weight): merged in place.
	for o := range out {
		for i := range in {
			acc := 0.0
			for k := range r {
				acc += float64(B[o*r+k]) * float64(A[k*in+i])
			}
			W[o*in+i] = float32(float64(W[o*in+i]) + s*acc)
		}
	}
	return W, shape, nil
}

// Merge folds the adapters into the model's base weights (W += scaling·B·A)
// and detaches the adapter from the model; the base stays frozen. Use
// m.Save afterwards to write a merged HF model, or SaveMerged to write one
// without changing the model.
func (a *Adapter) Merge() error {
	var errs []error
	type upd struct {
		name  string
		data  []float32
		shape []int
	}
	var ups []upd
	for _, mod := range a.modules {
		data, shape, err := a.merged(mod)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		ups = append(ups, upd{mod + ".weight", data, shape})
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	for _, u := range ups {
		if err := a.m.SetWeight(u.name, u.data, u.shape); err != nil {
			return fmt.Errorf("lora: merge: %w", err)
		}
	}
	if a.m.Adapter() == model.Adapter(a) {
		a.m.SetAdapter(nil)
	}
	return nil
}

// MergedWeight returns the values and shape of the model's weight name
// (an HF name, "model.layers.0.self_attn.q_proj.weight") with the adapter
// merged in: W + scaling·B·A for an adapted module's weight, the weight
// itself otherwise. It changes nothing; one weight at a time, so a whole
// merged model can be written without holding it (model.WriteSafetensorsFunc).
func (a *Adapter) MergedWeight(name string) ([]float32, []int, error) {
	if mod, ok := strings.CutSuffix(name, ".weight"); ok && slices.Contains(a.modules, mod) {
		return a.merged(mod)
	}
	data, shape, err := a.m.Weight(name)
	if err != nil {
		return nil, nil, fmt.Errorf("lora: %w", err)
	}
	return data, shape, nil
}

// SaveMerged writes the model with the adapters merged in (HF layout:
// config.json and an F32 model.safetensors) to dir, leaving the model
// unchanged; the weights are merged and written one at a time.
func (a *Adapter) SaveMerged(dir string) error {
	cfg := a.m.Config()
	if err := model.SaveConfig(dir, cfg, "F32"); err != nil {
		return err
	}
	return model.WriteSafetensorsFunc(filepath.Join(dir, "model.safetensors"), cfg.Weights(), "F32", func(name string) ([]float32, error) {
		data, _, err := a.MergedWeight(name)
		return data, err
	})
}

// dropout zeroes inputs with probability rate and rescales the rest, only
// while training (ctx.IsTraining), as PEFT's nn.Dropout on the LoRA input.
func dropout(ctx *mlctx.Context, x *Node, rate float64) *Node {
	g := x.Graph()
	if !ctx.IsTraining(g) {
		return x
	}
	rnd := ctx.RandomUniform(g, shapes.Make(x.DType(), x.Shape().Dimensions...))
	keep := GreaterThan(rnd, ConstAsDType(g, x.DType(), rate))
	return Where(keep, MulScalar(x, 1/(1-rate)), ZerosLike(x))
}
