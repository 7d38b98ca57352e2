package memplan

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/grpokit/grpokit/internal/pad"
	"github.com/grpokit/grpokit/model"
)

// Request describes a training run to Estimate: the model's
// config.json, the trainer settings and how the weights are held.
type Request struct {
	// Model is the checkpoint's config (model.ReadConfig).
	Model model.Config
	// Train are the trainer settings that size a run (grpo.Config's
	// MemorySettings fills them).
	Train Training
	// LoRARank is the adapter's rank r; 0 plans full fine-tuning (float32
	// master weights, gradients and AdamW state for every weight).
	LoRARank int
	// LoRATargets are the adapter's target modules (nil: q_proj and
	// v_proj, lora.Config's default).
	LoRATargets []string
	// Storage is how a LoRA run holds the frozen base (model.Storage:
	// as stored, bf16, nf4, int8, a GGUF file's blocks, or float32); full
	// fine-tuning is float32.
	Storage model.Storage
	// DoubleQuant is bnb_4bit_use_double_quant (NF4 only).
	DoubleQuant bool
	// FileDType is the checkpoint's matrix dtype as safetensors names it
	// ("BF16", "F16", "F32"); "" reads Model.TorchDType (bfloat16 when
	// that is empty too).
	FileDType string
	// PromptTokens is the longest prompt in tokens; 0 means
	// Train.MaxPromptLength, or 512 when that is 0 too.
	PromptTokens int
	// WeightBytes, when > 0, is what the weights take as held (a loaded
	// model's exact figure: LMPolicy sums its variables); 0 computes it
	// from Model, Storage and FileDType (model.Config.HeldBytes).
	WeightBytes int64
	// WidensWeights says the backend's products widen a low-precision
	// weight to float32 first (XLA); false is the pure-Go backend, whose
	// products decode it while packing (no float32 copy).
	WidensWeights bool
	// Extra is memory the run holds beside the policy, such as a reward
	// model's weights and the transient memory of its forward pass: each
	// item counts in the peak in full (a reward model's pass, which runs
	// between generation and the step, is counted as if it overlapped
	// them).
	Extra []Item
}

// LogitsChunkElements is the size, in logits, of the chunks of completion
// positions the trainer maps to logits when logits_chunk_size is 0: 8 Mi
// float32 (32 MiB) per [B, n, V] tensor.
const LogitsChunkElements = 8 << 20

// Training are the trainer settings a memory plan depends on, named as
// TRL's GRPOConfig names them.
type Training struct {
	BatchSize                 int // per_device_train_batch_size (≥ 1)
	GradientAccumulationSteps int // gradient_accumulation_steps; 0 means 1
	// GenerationBatchSize is the completions generated at once
	// (generation_batch_size); 0 means BatchSize × GradientAccumulationSteps.
	GenerationBatchSize int
	NumGenerations      int     // num_generations (named in the advice an OutOfMemoryError gives)
	MaxPromptLength     int     // max_prompt_length; 0 for none
	MaxCompletionLength int     // max_completion_length (≥ 1)
	Beta                float64 // KL weight: beta ≠ 0 keeps a reference model
	// RefModelSyncSteps is ref_model_sync_steps when sync_ref_model moves
	// full fine-tuning's reference copy toward the policy; 0 when it stays
	// frozen. The copy's size is the same either way.
	RefModelSyncSteps     int
	GradientCheckpointing bool // gradient_checkpointing
	LogitsChunkSize       int  // logits_chunk_size; 0 picks the chunk
	// Trajectories says every completion is a tool-calling trajectory
	// (grpo's SetTools): generated a turn at a time, each turn a new
	// generation over the context so far, so the KV cache is sized for
	// the longest context any turn can have.
	Trajectories bool
	// PromptGroup, above 1, is the rows per prompt when the trainer's
	// micro-batches hold whole groups of a prompt's completions and compute
	// each prompt once (share_prompts): the passes then hold the prompt's
	// activations once per group. 0 counts every row whole.
	PromptGroup int
	// Phases are the parts of a GRPO step the run has: generation and
	// the training pass (the zero value), the training pass alone
	// (supervised fine-tuning: no KV cache), or generation alone
	// (evaluation: no gradients, optimizer state or backward pass).
	Phases Phases
}

// Phases says which parts of a GRPO step a planned run has.
type Phases int

const (
	// GenerateAndTrain is a GRPO step: generation, then the training pass.
	GenerateAndTrain Phases = iota
	// TrainOnly is a training pass with no generation (supervised
	// fine-tuning, sft.Trainer): rows of BatchSize examples, prompt and
	// target padded as the trainer pads them.
	TrainOnly
	// GenerateOnly is generation alone (an evaluation, grpo.Evaluate):
	// GenerationBatchSize rows at a time (BatchSize when 0), nothing
	// trained. The adapter's weights count; gradients, optimizer state
	// and activations do not.
	GenerateOnly
)

// Item is one line of a Plan.
type Item struct {
	Name  string // what it is, e.g. "weights (nf4)"
	Bytes int64
	Note  string // how it was counted
}

// Plan is Estimate's estimate of a run's resident memory.
type Plan struct {
	// Items are the parts, in the order they are printed. Peak is their
	// sum less what is never held at once: generation's KV cache is freed
	// before the step's activations, logits and workspace exist, so only
	// the larger of the two counts.
	Items []Item
	Peak  int64
	// Summary describes the run in one line (model, training, tokens).
	Summary string
	// Setting values the advice of an OutOfMemoryError quotes.
	req Request
}

// Calibration of the estimate, measured with bench/memory on the
// workloads of bench/README.md: floats kept per token and layer for
// the backward pass, per hidden unit (residual stream, norms, projections'
// outputs), per MLP unit (gate, up, their activation and product), per
// query/key/value unit and per attention score (scores and probabilities).
const (
	actPerHidden = 8
	actPerMLP    = 4
	actPerQKV    = 2
	actPerScore  = 2
	// logitCopies: logits, log-softmax (kept for the backward pass) and
	// the gradient of the logits.
	logitCopies = 3
	// loraPerHidden, loraPerMLP and loraFixed are the floats per token and
	// layer that a LoRA step's backward pass reads from the forward pass
	// without gradient checkpointing,
	// beside one query/key/value head's worth of KV (nkv·hd), one score per
	// attention head and each adapted projection's output and its rank-r
	// product (no frozen weight gets a gradient, so the inputs of frozen
	// products are not kept): counted on the training graph of the
	// pure-Go backend at real models' widths (grpo's
	// TestLoRAActivationsKept). Gemma 3's MLP (GELU tanh) and its four
	// norms a layer keep more: gemmaPerHidden and gemmaPerMLP.
	loraPerHidden  = 4
	loraPerMLP     = 3
	loraFixed      = 16
	gemmaPerHidden = 6
	gemmaPerMLP    = 10
	// gcFraction is the Go heap's slack over the memory freed and
	// allocated again within a step when the run has no Go memory limit
	// (its plan is under minLimitedPeak): GOGC=100 lets the heap grow past
	// the live set before a collection, and freed pages return to the OS
	// late. Measured before the limit existed, peaks of one workload
	// varied by ±20% with the GC's timing (Qwen2.5-0.5B LoRA: 8.7–12.4
	// GB); 0.35 put the estimate within that band for every workload
	// measured then. A run with a limit (LimitGC) has no such slack: the
	// limit is the plan, and the collector keeps the heap under it.
	gcFraction = 0.35
	// runtimeBase is the Go runtime, the program and its compiled graphs.
	runtimeBase = 200 << 20
)

// Estimate estimates the peak resident memory of a GRPO run on r.Model
// with r.Train: the weights as held (stored, bf16, or quantized), the
// trainable float32 masters, their gradients and AdamW's two moments, the
// frozen reference copy of full fine-tuning when Beta ≠ 0, the KV cache
// of generation, the activations the backward pass keeps (without or with
// gradient checkpointing), the LM head's logits (whole or chunked), the
// transient workspace and the Go runtime's and garbage collector's
// overhead. The figures are estimates, calibrated against measured peak
// RSS (bench/memory); print them with Plan.Format and compare them
// with Available through Plan.Check.
func Estimate(r Request) (Plan, error) {
	c := r.Model
	if err := c.Validate(); err != nil {
		return Plan{}, fmt.Errorf("memplan: %w", err)
	}
	tc := r.Train
	if tc.BatchSize < 1 || tc.MaxCompletionLength < 1 {
		return Plan{}, fmt.Errorf("memplan: per_device_train_batch_size %d and max_completion_length %d must be ≥ 1", tc.BatchSize, tc.MaxCompletionLength)
	}
	if r.LoRARank < 0 || r.PromptTokens < 0 || r.WeightBytes < 0 {
		return Plan{}, fmt.Errorf("memplan: negative LoRARank, PromptTokens or WeightBytes")
	}
	if r.LoRARank == 0 && r.Storage != model.StorageF32 && r.Storage != model.StorageAsStored {
		return Plan{}, fmt.Errorf("memplan: full fine-tuning keeps float32 weights; storage %q needs LoRA", r.Storage)
	}
	file := r.FileDType
	if file == "" {
		file = "BF16"
		switch strings.ToLower(c.TorchDType) {
		case "float32":
			file = "F32"
		case "float16":
			file = "F16"
		}
	}
	tp := r.PromptTokens
	if tp == 0 {
		tp = tc.MaxPromptLength
	}
	if tp == 0 {
		tp = 512
	}
	accum := max(tc.GradientAccumulationSteps, 1)
	rows, tcomp := int64(tc.BatchSize), int64(tc.MaxCompletionLength)
	// The step pads prompts to a bucketed length (pad.Bucket, as the
	// trainer's micro-batches) and completions to max_completion_length.
	seq := int64(pad.Bucket(tp, tc.MaxPromptLength)) + tcomp
	genRows := rows * int64(accum)
	if g := tc.GenerationBatchSize; g > 0 {
		genRows = int64(g) // generated at once (generation_batch_size)
	}
	params := c.NumParams()
	L, H, I := int64(c.NumHiddenLayers), int64(c.HiddenSize), int64(c.IntermediateSize)
	nh, nkv, hd, V := int64(c.NumAttentionHeads), int64(c.NumKeyValueHeads), int64(c.HeadDim), int64(c.VocabSize)

	p := Plan{req: r}
	add := func(name string, b int64, note string, args ...any) {
		p.Items = append(p.Items, Item{Name: name, Bytes: b, Note: fmt.Sprintf(note, args...)})
	}

	// Weights and what trains.
	var trainable, held int64
	lowPrecision := false
	if r.LoRARank == 0 {
		trainable = params
		add("weights (f32 master)", 4*params, "%s params × 4 B", count(params))
	} else {
		held = r.WeightBytes
		if held == 0 {
			held = c.HeldBytes(r.Storage, file, r.DoubleQuant)
		}
		lowPrecision = held < 4*params
		name := storageName(r.Storage, file)
		if r.WeightBytes > 0 && r.Storage == model.StorageAsStored {
			name = "as stored" // the file's dtype is not known here
		}
		add(fmt.Sprintf("weights (%s)", name), held, "%s params as held", count(params))
		trainable = loraParams(c, r.LoRARank, r.LoRATargets)
		add("LoRA master weights", 4*trainable, "%s params × 4 B (r=%d)", count(trainable), r.LoRARank)
	}
	if tc.Phases == GenerateOnly {
		return p.generation(r, genRows, int64(tp), tcomp), nil
	}
	add("gradients", 4*trainable, "%s × 4 B", count(trainable))
	add("optimizer (AdamW)", 8*trainable, "two f32 moments")
	switch {
	case tc.Beta != 0 && r.LoRARank == 0 && tc.RefModelSyncSteps > 0:
		// The sync overwrites the copy in place between steps, with a
		// temporary of one weight at a time: less than the gradients and
		// the update's temporaries a step holds.
		add("reference model", 4*params, "f32 copy (beta %g), mixed with the policy every %d steps", tc.Beta, tc.RefModelSyncSteps)
	case tc.Beta != 0 && r.LoRARank == 0:
		add("reference model", 4*params, "frozen f32 copy (beta %g)", tc.Beta)
	default:
		why := "beta 0"
		if r.LoRARank > 0 {
			why = "the base without the adapter"
		}
		add("reference model", 0, "none: %s", why)
	}

	for _, it := range r.Extra {
		if it.Bytes < 0 {
			return Plan{}, fmt.Errorf("memplan: Estimate: extra item %q has %d bytes", it.Name, it.Bytes)
		}
		add(it.Name, it.Bytes, "%s", it.Note)
	}

	// Generation's KV cache, float32, of as many slots a row as
	// model.Generate allocates (its bucketed lengths); a trajectory's turn
	// generates over the prompt and the turns before it, with the room
	// left.
	slots, cnote := model.CacheSlots(tp, int(tcomp)), ""
	if tc.Trajectories {
		for n := 1; n < int(tcomp); n++ {
			slots = max(slots, model.CacheSlots(tp+n, int(tcomp)-n))
		}
		cnote = ", the longest turn's context"
	}
	kv := genRows * L * 2 * nkv * hd * int64(slots) * 4
	if tc.Phases == TrainOnly {
		kv = 0
		add("KV cache", 0, "none: no generation")
	} else {
		add("KV cache", kv, "%d rows × %d slots%s × %d layers; generation only", genRows, slots, cnote, L)
	}

	// Activations kept for the backward pass, per micro-batch.
	tokens := rows * seq
	tnote := fmt.Sprintf("%d×%d tokens", rows, seq)
	if g := int64(tc.PromptGroup); g > 1 && rows%g == 0 && !tc.Trajectories {
		tokens = rows/g*(seq-tcomp) + rows*tcomp
		tnote = fmt.Sprintf("%d prompts × %d + %d×%d tokens", rows/g, seq-tcomp, rows, tcomp)
	}
	// With gradient checkpointing a layer's forward pass is recomputed
	// inside its backward pass, whole (the calibrated per-layer figure,
	// also for LoRA); without it a LoRA step keeps only what the backward
	// pass of the adapters reads (loraKept).
	perTokenLayer := 4 * (actPerHidden*H + actPerMLP*I + actPerQKV*(nh+2*nkv)*hd + actPerScore*nh*seq)
	if r.LoRARank > 0 && !tc.GradientCheckpointing {
		perTokenLayer = 4 * loraKept(c, r.LoRARank, r.LoRATargets, seq)
	}
	var act int64
	if tc.GradientCheckpointing {
		act = L*tokens*H*4 + tokens*perTokenLayer
		add("activations", act, "%s; checkpointed: layer inputs + one layer", tnote)
	} else {
		act = L * tokens * perTokenLayer
		add("activations", act, "%s × %d layers", tnote, L)
	}
	// The loss maps chunks of completion positions to logits
	// (logits_chunk_size; 0 picks about 8 Mi logits a chunk).
	chunk := int64(tc.LogitsChunkSize)
	if chunk == 0 {
		chunk = max(1, LogitsChunkElements/(rows*V))
	}
	chunk = min(chunk, tcomp)
	lrows := rows * chunk
	lnote := fmt.Sprintf("%d rows × %d positions a chunk × %s vocab", rows, chunk, count(V))
	logits := logitCopies * lrows * V * 4
	add("logits and log-softmax", logits, "%s", lnote)

	// Transient workspace: the backward pass's gradient of one layer, and
	// where the backend widens low-precision weights, the largest one
	// widened to float32 for its product. With checkpointing the layer's
	// recomputed activations (counted above) are freed as its backward
	// pass consumes them, so its gradients add about half a layer
	// (Llama-3.2-1B NF4: 1.08 GiB of step memory measured at the Go
	// memory limit where the collector starts to run continuously).
	work := tokens * perTokenLayer
	wnote := "one layer's gradients"
	if tc.GradientCheckpointing {
		work /= 2
		wnote = "half of one layer's gradients (checkpointed)"
	}
	if lowPrecision && r.WidensWeights {
		work += 4 * c.LargestMatrix()
		wnote += " + the largest weight widened to f32"
	}
	add("workspace", work, "%s", wnote)

	// The AdamW step overwrites each variable's weights and moments in
	// their own buffers (update.go) with two temporaries of the
	// variable's size, smallest variable first, freeing each gradient once
	// applied: beside the gradients still held, the temporaries of the
	// second-largest matrix, and the largest one's (3 copies with its
	// gradient) only beyond what the other gradients held
	// (TestAdamUpdateInPlace).
	largest, second := largestMatrices(c)
	if r.LoRARank > 0 {
		largest = loraLargest(c, r.LoRARank, r.LoRATargets)
		second = largest
	}
	update := 4 * (max(0, 3*largest-trainable) + 2*second)
	add("optimizer update", update, "in place, smallest variable first; temporaries beside the gradients")

	// Generation (KV cache) and the step (activations, logits,
	// workspace) come one after the other.
	var need int64
	for _, it := range p.Items {
		need += it.Bytes
	}
	need -= min(kv, act+logits+work)
	if need+runtimeBase >= minLimitedPeak {
		// LimitGC sets the plan as the run's Go memory limit: the
		// collector runs, and hands memory back, before the heap passes
		// it, so the plan holds no slack for garbage.
		add("Go runtime and GC", runtimeBase, "runtime; the Go memory limit (this plan) bounds the heap")
	} else {
		transient := act + logits + work + 4*trainable + update
		gc := int64(gcFraction * float64(transient))
		gnote := fmt.Sprintf("runtime + %.0f%% of what a step allocates (no Go memory limit below %s)", 100*gcFraction, FormatBytes(minLimitedPeak))
		if lowPrecision && r.WidensWeights {
			// Every product widens its weight afresh: a pass makes
			// garbage as large as the widened weights, and GOGC=100 lets
			// the heap grow to twice the live set before collecting it.
			gc += held
			gnote += " + the weights' widened garbage"
		}
		add("Go runtime and GC", runtimeBase+gc, "%s", gnote)
	}

	p.Peak = need + p.Items[len(p.Items)-1].Bytes // + runtime and GC
	mode := "full fine-tuning"
	if r.LoRARank > 0 {
		mode = fmt.Sprintf("LoRA r=%d", r.LoRARank)
	}
	ckpt := ""
	if tc.GradientCheckpointing {
		ckpt = ", gradient checkpointing"
	}
	if tc.Phases == TrainOnly {
		mode = "supervised, " + mode
	}
	p.Summary = fmt.Sprintf("%s, %s params, %s; %d rows × (%d prompt + %d completion) tokens%s",
		c.ModelType, count(params), mode, rows, tp, tcomp, ckpt)
	return p, nil
}

// generation completes p, which holds the weights, as the plan of
// generation alone (GenerateOnly): rows sequences of tp prompt and up to
// tcomp new tokens. Its parts are held at once: the KV
// cache, the prefill's transient (one layer's forward pass over the
// prompts, the graph freeing each layer's values before the next) and
// the logits of the last position.
func (p Plan) generation(r Request, rows, tp, tcomp int64) Plan {
	c := r.Model
	add := func(name string, b int64, note string, args ...any) {
		p.Items = append(p.Items, Item{Name: name, Bytes: b, Note: fmt.Sprintf(note, args...)})
	}
	L, H, I := int64(c.NumHiddenLayers), int64(c.HiddenSize), int64(c.IntermediateSize)
	nh, nkv, hd, V := int64(c.NumAttentionHeads), int64(c.NumKeyValueHeads), int64(c.HeadDim), int64(c.VocabSize)
	tp = int64(pad.Bucket(int(tp), r.Train.MaxPromptLength))
	slots := int64(model.CacheSlots(int(tp), int(tcomp)))
	kv := rows * L * 2 * nkv * hd * slots * 4
	add("KV cache", kv, "%d rows × %d slots × %d layers", rows, slots, L)
	perToken := 4 * (actPerHidden*H + actPerMLP*I + actPerQKV*(nh+2*nkv)*hd + actPerScore*nh*tp)
	add("prefill workspace", rows*tp*perToken, "one layer's forward pass over %d×%d prompt tokens", rows, tp)
	add("logits", 2*rows*V*4, "%d rows × %s vocab, and their probabilities", rows, count(V))
	var need int64
	for _, it := range p.Items {
		need += it.Bytes
	}
	if need+runtimeBase >= minLimitedPeak {
		add("Go runtime and GC", runtimeBase, "runtime; the Go memory limit (this plan) bounds the heap")
	} else {
		// Every decode step allocates its cache and logits anew.
		add("Go runtime and GC", runtimeBase+kv, "runtime + one KV cache of garbage (no Go memory limit below %s)", FormatBytes(minLimitedPeak))
	}
	p.Peak = need + p.Items[len(p.Items)-1].Bytes
	p.Summary = fmt.Sprintf("%s, %s params, generation only; %d rows × (%d prompt + %d new) tokens", c.ModelType, count(c.NumParams()), rows, tp, tcomp)
	return p
}

// loraKept is the floats per token and layer a LoRA step's backward pass
// reads from the forward pass over seq tokens (see loraPerHidden).
func loraKept(c model.Config, r int, targets []string, seq int64) int64 {
	if targets == nil {
		targets = []string{"q_proj", "v_proj"}
	}
	h, i, q, kv := int64(c.HiddenSize), int64(c.IntermediateSize), int64(c.NumAttentionHeads*c.HeadDim), int64(c.NumKeyValueHeads*c.HeadDim)
	perH, perI := int64(loraPerHidden), int64(loraPerMLP)
	if strings.HasPrefix(c.ModelType, "gemma") {
		perH, perI = gemmaPerHidden, gemmaPerMLP
	}
	out := map[string]int64{"q_proj": q, "k_proj": kv, "v_proj": kv, "o_proj": h, "gate_proj": i, "up_proj": i, "down_proj": h}
	n := perH*h + perI*i + kv + int64(c.NumAttentionHeads)*seq + loraFixed
	for _, t := range targets {
		n += out[t] + int64(r)
	}
	return n
}

// loraParams counts an adapter's weights: r·(in+out) per target module and
// layer.
func loraParams(c model.Config, r int, targets []string) int64 {
	if targets == nil {
		targets = []string{"q_proj", "v_proj"}
	}
	h, q, kv, in := int64(c.HiddenSize), int64(c.NumAttentionHeads*c.HeadDim), int64(c.NumKeyValueHeads*c.HeadDim), int64(c.IntermediateSize)
	dims := map[string]int64{
		"q_proj": h + q, "k_proj": h + kv, "v_proj": h + kv, "o_proj": q + h,
		"gate_proj": h + in, "up_proj": h + in, "down_proj": in + h,
	}
	var n int64
	for _, t := range targets {
		n += dims[t]
	}
	return n * int64(r) * int64(c.NumHiddenLayers)
}

// largestMatrices returns the sizes of the two largest weight matrices
// (equal when the largest appears twice, as an untied LM head).
func largestMatrices(c model.Config) (first, second int64) {
	for _, w := range c.Weights() {
		if len(w.Shape) != 2 {
			continue
		}
		n := int64(w.Shape[0]) * int64(w.Shape[1])
		if n > first {
			first, second = n, first
		} else if n > second {
			second = n
		}
	}
	return first, second
}

// loraLargest is the largest adapter matrix: A [r, in] or B [out, r].
func loraLargest(c model.Config, r int, targets []string) int64 {
	if targets == nil {
		targets = []string{"q_proj", "v_proj"}
	}
	h, q, kv, in := int64(c.HiddenSize), int64(c.NumAttentionHeads*c.HeadDim), int64(c.NumKeyValueHeads*c.HeadDim), int64(c.IntermediateSize)
	dims := map[string][2]int64{
		"q_proj": {h, q}, "k_proj": {h, kv}, "v_proj": {h, kv}, "o_proj": {q, h},
		"gate_proj": {h, in}, "up_proj": {h, in}, "down_proj": {in, h},
	}
	var m int64
	for _, t := range targets {
		m = max(m, dims[t][0], dims[t][1])
	}
	return m * int64(r)
}

func storageName(s model.Storage, file string) string {
	switch s {
	case model.StorageF32:
		return "f32"
	case model.StorageAsStored:
		if file == "BF16" {
			return "bf16 as stored"
		}
		return "f32"
	}
	return string(s)
}

// count writes n with a metric suffix: 494.0M, 8.03B.
func count(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.2fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

// FormatBytes writes b in GB (10⁹ bytes) with two decimals, or MB below
// 0.1 GB.
func FormatBytes(b int64) string {
	if b < 100e6 {
		return fmt.Sprintf("%.0f MB", float64(b)/1e6)
	}
	return fmt.Sprintf("%.2f GB", float64(b)/1e9)
}

// Format writes the plan as a short table, ending with the peak and, when
// avail > 0, the memory available (from source).
func (p Plan) Format(w io.Writer, avail int64, source string) {
	fmt.Fprintf(w, "memory plan: %s\n", p.Summary)
	for _, it := range p.Items {
		fmt.Fprintf(w, "  %-26s %10s  %s\n", it.Name, FormatBytes(it.Bytes), it.Note)
	}
	if avail > 0 {
		fmt.Fprintf(w, "  %-26s %10s  of %s available (%s)\n", "peak (estimate)", FormatBytes(p.Peak), FormatBytes(avail), source)
	} else {
		fmt.Fprintf(w, "  %-26s %10s\n", "peak (estimate)", FormatBytes(p.Peak))
	}
}

// String returns Format's table without the available memory.
func (p Plan) String() string {
	var b strings.Builder
	p.Format(&b, 0, "")
	return b.String()
}

// OutOfMemoryError is Plan.Check's error: the plan's peak exceeds
// the memory available.
type OutOfMemoryError struct {
	Plan      Plan
	Available int64
	Source    string // where Available came from: MemAvailable, the cgroup limit, GRPOKIT_MEMORY_LIMIT
}

// Error names the settings that lower the peak, with their values.
func (e *OutOfMemoryError) Error() string {
	r := e.Plan.req
	var lower []string
	if r.Train.Phases == GenerateOnly {
		lower = append(lower, fmt.Sprintf("the rows generated at once (%d)", cmp.Or(r.Train.GenerationBatchSize, r.Train.BatchSize)))
	} else {
		lower = append(lower, fmt.Sprintf("per_device_train_batch_size (%d)", r.Train.BatchSize))
	}
	if r.Train.Phases == GenerateAndTrain {
		lower = append(lower, fmt.Sprintf("num_generations (%d)", r.Train.NumGenerations))
	}
	lower = append(lower, fmt.Sprintf("max_completion_length (%d)", r.Train.MaxCompletionLength))
	if !r.Train.GradientCheckpointing && r.Train.Phases != GenerateOnly {
		lower = append(lower, "turn on gradient_checkpointing")
	}
	switch {
	case r.LoRARank == 0:
		lower = append(lower, "train a LoRA adapter with a quantized base (quantization nf4: load_in_4bit)")
	case r.Storage != model.StorageNF4:
		lower = append(lower, "quantize the frozen base (quantization nf4: load_in_4bit, or int8: load_in_8bit)")
	}
	big := e.Plan.Items[0]
	for _, it := range e.Plan.Items {
		if it.Bytes > big.Bytes {
			big = it
		}
	}
	return fmt.Sprintf("memplan: memory plan: the run needs about %s at peak (largest part: %s, %s) but %s is available (%s); lower %s; or set %s=off to run anyway (or to a size such as 16GB)",
		FormatBytes(e.Plan.Peak), big.Name, FormatBytes(big.Bytes), FormatBytes(e.Available), e.Source,
		strings.Join(lower, ", "), LimitEnv)
}

// Check returns an *OutOfMemoryError when the plan's peak exceeds avail
// bytes (source says where avail came from); avail ≤ 0 means unknown and
// passes.
func (p Plan) Check(avail int64, source string) error {
	if avail > 0 && p.Peak > avail {
		return &OutOfMemoryError{Plan: p, Available: avail, Source: source}
	}
	return nil
}
