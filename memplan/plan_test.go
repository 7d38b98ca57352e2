package memplan

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/model"
)

// planModel is a Llama-shaped config small enough to count by hand.
func planModel(v, h, inter, layers, heads, kvHeads, headDim int) model.Config {
	return model.Config{
		ModelType: "llama", VocabSize: v, HiddenSize: h, IntermediateSize: inter,
		NumHiddenLayers: layers, NumAttentionHeads: heads, NumKeyValueHeads: kvHeads, HeadDim: headDim,
		MaxPositionEmbeddings: 512, RMSNormEps: 1e-5, RopeTheta: 10000, TieWordEmbeddings: true, HiddenAct: "silu",
		BOSTokenID: 1, EOSTokenIDs: []int{2},
	}
}

// TestPlanMemoryArithmetic checks every item of the plan against numbers
// counted by hand from the shapes (see the comments), not from the
// planner's own helpers.
func TestPlanMemoryArithmetic(t *testing.T) {
	const base = 200 << 20
	for _, tc := range []struct {
		name string
		req  Request
		want map[string]int64 // item name → bytes
	}{{
		// V=100 H=8 I=16 L=2 heads 2/1 of 4: per layer 2 norms (16) + q 64 +
		// k 32 + v 32 + o 64 + gate, up, down 128 each = 592; embedding 800,
		// final norm 8: P = 800 + 2·592 + 8 = 1992.
		name: "full fine-tuning",
		req: Request{
			Model: planModel(100, 8, 16, 2, 2, 1, 4),
			Train: Training{BatchSize: 2, GradientAccumulationSteps: 1, MaxPromptLength: 6, MaxCompletionLength: 4},
		},
		want: map[string]int64{
			"weights (f32 master)": 4 * 1992,
			"gradients":            4 * 1992,
			"optimizer (AdamW)":    8 * 1992,
			"reference model":      0,
			// 2 rows · 2 layers · (k, v) · 1 head · 4 · 32 slots (Generate:
			// the 6-token prompt bucketed to 16, + 4 new tokens, bucketed
			// to 32) · 4 B
			"KV cache": 2 * 2 * 2 * 1 * 4 * 32 * 4,
			// per token and layer 4·(8·8 + 4·16 + 2·(2+2)·4 + 2·2·10) = 800 B;
			// 2 layers · 20 tokens
			"activations": 2 * 20 * 800,
			// 3 copies · 2 rows · 4 positions (a chunk of 8 Mi logits holds
			// them all) · 100 · 4 B
			"logits and log-softmax": 3 * 8 * 100 * 4,
			"workspace":              20 * 800,
			// the embedding (800 values) and its temporaries beyond the
			// other gradients: 3·800 − 1992 = 408; 2 temporaries of a
			// 128-value MLP matrix; · 4 B
			"optimizer update": (408 + 2*128) * 4,
			// 0.35 of activations + logits + workspace + gradients + update
			"Go runtime and GC": base + (32000+9600+16000+7968+2656)*35/100,
		},
	}, {
		// share_prompts: the two rows are one group, their 6 prompt
		// tokens held once: 6 + 2·4 = 14 tokens (the per-token figure as
		// above, its scores still over the row's 10 keys).
		name: "full fine-tuning, shared prompts",
		req: Request{
			Model: planModel(100, 8, 16, 2, 2, 1, 4),
			Train: Training{BatchSize: 2, MaxPromptLength: 6, MaxCompletionLength: 4, PromptGroup: 2},
		},
		want: map[string]int64{"activations": 2 * 14 * 800, "workspace": 14 * 800},
	}, {
		// A group that does not divide the rows counts them whole.
		name: "full fine-tuning, groups that do not divide the batch",
		req: Request{
			Model: planModel(100, 8, 16, 2, 2, 1, 4),
			Train: Training{BatchSize: 2, MaxPromptLength: 6, MaxCompletionLength: 4, PromptGroup: 4},
		},
		want: map[string]int64{"activations": 2 * 20 * 800},
	}, {
		name: "full fine-tuning with beta",
		req: Request{
			Model: planModel(100, 8, 16, 2, 2, 1, 4),
			Train: Training{BatchSize: 2, MaxPromptLength: 6, MaxCompletionLength: 4, Beta: 0.04},
		},
		want: map[string]int64{"reference model": 4 * 1992},
	}, {
		// TR-DPO's sync mixes the policy into the same copy.
		name: "full fine-tuning with a synced reference",
		req: Request{
			Model: planModel(100, 8, 16, 2, 2, 1, 4),
			Train: Training{BatchSize: 2, MaxPromptLength: 6, MaxCompletionLength: 4, Beta: 0.04, RefModelSyncSteps: 64},
		},
		want: map[string]int64{"reference model": 4 * 1992},
	}, {
		// A 4 Mi vocabulary: chunks of 8 Mi logits hold one position of the
		// 2 rows.
		name: "default logits chunk, weights given",
		req: Request{
			Model:       planModel(4<<20, 8, 16, 2, 2, 1, 4),
			Train:       Training{BatchSize: 2, MaxPromptLength: 6, MaxCompletionLength: 4},
			LoRARank:    1,
			Storage:     model.StorageAsStored,
			WeightBytes: 12345,
		},
		want: map[string]int64{
			"logits and log-softmax": 3 * 2 * 1 * (4 << 20) * 4,
			"weights (as stored)":    12345,
		},
	}, {
		// V=128 H=64 I=128 L=1 heads 4/2 of 16: projections q 4096, k 2048,
		// v 2048, o 4096, gate/up/down 8192 each = 36864 values; NF4 takes
		// n/2 + 4·n/64 B of each: 18432 + 2304. Embedding 8192 bf16 = 16384
		// B, norms 2·64 + 64 float32 = 768 B.
		name: "QLoRA nf4, chunked loss, widening backend",
		req: Request{
			Model:         planModel(128, 64, 128, 1, 4, 2, 16),
			Train:         Training{BatchSize: 4, GradientAccumulationSteps: 2, MaxCompletionLength: 4, Beta: 0.04, LogitsChunkSize: 2},
			LoRARank:      2,
			Storage:       model.StorageNF4,
			PromptTokens:  12,
			WidensWeights: true,
		},
		want: map[string]int64{
			"weights (nf4)": 16384 + 768 + 18432 + 2304,
			// r=2 on q (64+64) and v (64+32): 448 params
			"LoRA master weights": 4 * 448,
			"gradients":           4 * 448,
			"optimizer (AdamW)":   8 * 448,
			"reference model":     0, // the base without the adapter
			// 8 generated rows · 1 layer · 2 · 2 heads · 16 · 32 slots (12
			// prompt tokens bucketed to 16, + 4, bucketed) · 4 B
			"KV cache": 8 * 2 * 2 * 16 * 32 * 4,
			// LoRA keeps per token and layer 4·64 + 3·128 + 2·16 (k/v
			// width) + 4 heads · 20 tokens + 16 + q's 64 + 2 + v's 32 + 2
			// = 868 floats = 3472 B; 4 rows of 16 (12 prompt tokens
			// bucketed) + 4 tokens
			"activations": 80 * 3472,
			// chunks of 2 positions × 4 rows
			"logits and log-softmax": 3 * 8 * 128 * 4,
			// + the largest matrix (8192 values) widened to float32
			"workspace": 80*3472 + 4*8192,
			// 2 temporaries of q_proj's A [2, 64] or B [64, 2] · 4 B
			"optimizer update": 2 * 128 * 4,
			// + the weights as held: the garbage of widening them
			"Go runtime and GC": base + (277760+12288+310528+1792+1024)*35/100 + 16384 + 768 + 18432 + 2304,
		},
	}, {
		// The pure-Go backend's products decode the weights while packing:
		// no widened copy, no widened garbage.
		name: "QLoRA nf4, fused products",
		req: Request{
			Model:        planModel(128, 64, 128, 1, 4, 2, 16),
			Train:        Training{BatchSize: 4, GradientAccumulationSteps: 2, MaxCompletionLength: 4, Beta: 0.04, LogitsChunkSize: 2},
			LoRARank:     2,
			Storage:      model.StorageNF4,
			PromptTokens: 12,
		},
		want: map[string]int64{
			"workspace": 80 * 3472,
			// 0.35 · (277760+12288+277760+1792+1024) = 199718.4, truncated
			"Go runtime and GC": base + 199718,
		},
	}, {
		// 2 GiB of weights: the run gets a Go memory limit (the plan), so
		// the plan counts the runtime and no collector's slack.
		name: "under the Go memory limit",
		req: Request{
			Model:        planModel(128, 64, 128, 1, 4, 2, 16),
			Train:        Training{BatchSize: 4, MaxCompletionLength: 4},
			LoRARank:     2,
			Storage:      model.StorageNF4,
			PromptTokens: 12,
			WeightBytes:  2 << 30,
		},
		want: map[string]int64{
			"weights (nf4)":     2 << 30,
			"Go runtime and GC": base,
		},
	}, {
		// A trajectory's later turn generates over the prompt and the
		// turns before it, with the room left: with 207 prompt tokens and
		// 96 in all, the turn after 50 tokens has a 257-token context,
		// bucketed to 512, + 46 new tokens, bucketed to 768 slots.
		name: "tool-calling trajectories",
		req: Request{
			Model:        planModel(128, 64, 128, 1, 4, 2, 16),
			Train:        Training{BatchSize: 4, MaxCompletionLength: 96, Trajectories: true},
			LoRARank:     2,
			Storage:      model.StorageNF4,
			PromptTokens: 207,
		},
		want: map[string]int64{
			// 4 rows · 1 layer · 2 · 2 heads · 16 · 768 slots · 4 B
			"KV cache": 4 * 2 * 2 * 16 * 768 * 4,
			// 4 rows of 224 (207 bucketed) + 96 tokens; per token and
			// layer 4·64 + 3·128 + 2·16 + 4 heads · 320 + 16 + 66 + 34 =
			// 2068 floats
			"activations": 4 * 320 * 2068 * 4,
		},
	}, {
		// One turn: the 207-token prompt bucketed to 256, + 96, bucketed
		// to 512 slots.
		name: "single-turn completions",
		req: Request{
			Model:        planModel(128, 64, 128, 1, 4, 2, 16),
			Train:        Training{BatchSize: 4, MaxCompletionLength: 96},
			LoRARank:     2,
			Storage:      model.StorageNF4,
			PromptTokens: 207,
		},
		want: map[string]int64{"KV cache": 4 * 2 * 2 * 16 * 512 * 4},
	}, {
		name: "QLoRA with gradient checkpointing",
		req: Request{
			Model:        planModel(128, 64, 128, 2, 4, 2, 16),
			Train:        Training{BatchSize: 4, MaxCompletionLength: 4, GradientCheckpointing: true},
			LoRARank:     2,
			Storage:      model.StorageInt8,
			PromptTokens: 12,
		},
		want: map[string]int64{
			// int8: a byte a value + 4 B per output row: q 4096+256, k
			// 2048+128, v 2048+128, o 4096+256, gate 8192+512, up
			// 8192+512, down 8192+256 = 38912 per layer
			"weights (int8)": 16384 + 2*(512+38912) + 256,
			// layer inputs 2 · 80 tokens · 64 · 4 B + one layer
			// recomputed whole: 4·(8·64 + 4·128 + 2·(4+4)·16 + 2·4·20) =
			// 5760 B a token
			"activations": 2*80*64*4 + 80*5760,
			// half of one layer's gradients
			"workspace": 80 * 5760 / 2,
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Estimate(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			var sum int64
			for _, it := range p.Items {
				got[it.Name] = it.Bytes
				sum += it.Bytes
			}
			for name, want := range tc.want {
				if g, ok := got[name]; !ok || g != want {
					t.Errorf("%s = %d (present %v), want %d", name, g, ok, want)
				}
			}
			// The KV cache (generation) is never held beside the step's
			// activations, logits and workspace (larger in every case).
			if p.Peak != sum-got["KV cache"] {
				t.Errorf("peak %d, items sum to %d with a KV cache of %d", p.Peak, sum, got["KV cache"])
			}
		})
	}
}

func TestPlanMemoryBadRequest(t *testing.T) {
	m := planModel(100, 8, 16, 2, 2, 1, 4)
	for _, r := range []Request{
		{Model: m, Train: Training{BatchSize: 0, MaxCompletionLength: 4}},
		{Model: m, Train: Training{BatchSize: 2, MaxCompletionLength: 0}},
		{Model: m, Train: Training{BatchSize: 2, MaxCompletionLength: 4}, Storage: model.StorageNF4},
		{Model: model.Config{ModelType: "nope"}, Train: Training{BatchSize: 2, MaxCompletionLength: 4}},
	} {
		if _, err := Estimate(r); err == nil {
			t.Errorf("%+v: no error", r)
		}
	}
}

// TestPlanMemoryRealShapes checks the weights of the workloads
// against their parameter counts: bf16 is two bytes a weight (norms and
// biases four), NF4 a little over half a byte for the projections.
func TestPlanMemoryRealShapes(t *testing.T) {
	for _, tc := range []struct {
		file     string
		storage  model.Storage
		min, max float64 // GB
	}{
		{"Qwen2.5-0.5B-Instruct.json", model.StorageAsStored, 0.98, 1.0},
		{"Qwen2.5-0.5B-Instruct.json", model.StorageNF4, 0.45, 0.49},
		{"Llama-3.2-1B-Instruct.json", model.StorageBF16, 2.46, 2.48},
		// 6.98B projection weights · 0.5625 B + embedding and LM head 2 · 525M · 2 B
		{"Llama-3.1-8B-Instruct.json", model.StorageNF4, 5.95, 6.1},
	} {
		c, err := model.ReadConfig(filepath.Join("..", "model", "testdata", "configs", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		p, err := Estimate(Request{Model: c, Train: Training{BatchSize: 8, MaxPromptLength: 150, MaxCompletionLength: 64}, LoRARank: 16, Storage: tc.storage})
		if err != nil {
			t.Fatal(err)
		}
		if gb := float64(p.Items[0].Bytes) / 1e9; gb < tc.min || gb > tc.max {
			t.Errorf("%s %s: %s = %.3f GB, want %.2f–%.2f", tc.file, tc.storage, p.Items[0].Name, gb, tc.min, tc.max)
		}
	}
}

func TestMemoryPlanCheck(t *testing.T) {
	p, err := Estimate(Request{
		Model: planModel(100, 8, 16, 2, 2, 1, 4),
		Train: Training{NumGenerations: 2, BatchSize: 2, MaxPromptLength: 6, MaxCompletionLength: 4},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		avail int64
		fail  bool
	}{{0, false}, {p.Peak, false}, {p.Peak + 1, false}, {p.Peak - 1, true}, {1 << 20, true}} {
		err := p.Check(tc.avail, "MemAvailable")
		var oom *OutOfMemoryError
		if got := errors.As(err, &oom); got != tc.fail {
			t.Errorf("avail %d: error %v, want failure %v", tc.avail, err, tc.fail)
			continue
		}
		if !tc.fail {
			continue
		}
		msg := err.Error()
		for _, want := range []string{"per_device_train_batch_size (2)", "num_generations (2)", "max_completion_length (4)",
			"gradient_checkpointing", "nf4", "MemAvailable", LimitEnv + "=off"} {
			if !strings.Contains(msg, want) {
				t.Errorf("error lacks %q: %s", want, msg)
			}
		}
	}
	var b strings.Builder
	p.Format(&b, 8e9, "MemAvailable")
	if out := b.String(); !strings.Contains(out, "memory plan: llama") || !strings.Contains(out, "of 8.00 GB available (MemAvailable)") {
		t.Errorf("table:\n%s", out)
	}
}

func TestParseMemorySize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
	}{
		{"16GB", 16e9}, {"12GiB", 12 << 30}, {"800MB", 800e6}, {"800 MiB", 800 << 20}, {"2G", 2 << 30},
		{"1.5GB", 1.5e9}, {"123456", 123456}, {"64kB", 64000},
	} {
		if got, err := ParseSize(tc.in); err != nil || got != tc.want {
			t.Errorf("%q = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "GB", "-1GB", "lots", "0"} {
		if _, err := ParseSize(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestAvailableMemory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	oldInfo, oldStatus, oldCg := meminfoFile, selfStatusFile, cgroupFiles
	defer func() { meminfoFile, selfStatusFile, cgroupFiles = oldInfo, oldStatus, oldCg }()
	meminfoFile = write("meminfo", "MemTotal:       24000000 kB\nMemFree:  1000 kB\nMemAvailable:   10000000 kB\n")
	selfStatusFile = write("status", "Name:\tx\nVmRSS:\t  2000000 kB\n")
	cgroupFiles = [][2]string{{write("max", "max\n"), write("cur", "5\n")}}
	t.Setenv(LimitEnv, "")

	if b, err := BudgetFromEnv(); err != nil || b.Off || b.Source != "MemAvailable" || b.Bytes != 12000000<<10 {
		t.Errorf("meminfo + RSS: %+v %v", b, err)
	}
	// A cgroup limit below MemAvailable wins: 8 GB limit − 7 GB used + RSS.
	cgroupFiles = [][2]string{{write("max2", "8000000000\n"), write("cur2", "7000000000\n")}}
	if b := Available(); b.Source != "cgroup memory limit" || b.Bytes != 1e9+2000000<<10 {
		t.Errorf("cgroup: %+v", b)
	}
	t.Setenv(LimitEnv, "16GB")
	if b, err := BudgetFromEnv(); err != nil || b.Off || b.Bytes != 16e9 || b.Source != LimitEnv {
		t.Errorf("env: %+v %v", b, err)
	}
	if b := Available(); b.Source != "cgroup memory limit" {
		t.Errorf("Available read %s: %+v", LimitEnv, b)
	}
	t.Setenv(LimitEnv, "off")
	if b, err := BudgetFromEnv(); err != nil || !b.Off {
		t.Errorf("off: %+v %v", b, err)
	}
	t.Setenv(LimitEnv, "much")
	if _, err := BudgetFromEnv(); err == nil || !strings.Contains(err.Error(), LimitEnv) {
		t.Errorf("bad limit: err = %v, want one naming %s", err, LimitEnv)
	}
}
