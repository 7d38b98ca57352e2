package memplan

import (
	"strings"
	"testing"
)

// TestPlanPhases checks the plans of a training pass alone (supervised
// fine-tuning) and of generation alone (an evaluation) against numbers
// counted by hand, on the model of TestPlanMemoryArithmetic: V=100 H=8
// I=16 L=2 heads 2/1 of 4, 1992 parameters.
func TestPlanPhases(t *testing.T) {
	const base = 200 << 20
	for _, tc := range []struct {
		name   string
		phases Phases
		want   map[string]int64
		absent []string
		peak   int64
	}{{
		// The step of the full fine-tuning case there without its KV
		// cache: everything else is held as in a GRPO step.
		name:   "training pass alone",
		phases: TrainOnly,
		want: map[string]int64{
			"weights (f32 master)": 4 * 1992, "gradients": 4 * 1992, "optimizer (AdamW)": 8 * 1992,
			"KV cache": 0, "activations": 2 * 20 * 800, "workspace": 20 * 800,
		},
		peak: 4*1992*2 + 8*1992 + 32000 + 9600 + 16000 + (408+2*128)*4 + base + (32000+9600+16000+7968+2656)*35/100,
	}, {
		// 2 rows of the 6-token prompt: the cache of 32 slots a row (as
		// there), one layer's forward pass over the 12 prompt tokens at
		// 4·(8·8 + 4·16 + 2·(2+2)·4 + 2·2·6) = 736 B a token, the last
		// position's logits and probabilities, and one cache of garbage
		// (no Go memory limit for so small a plan). All held at once.
		name:   "generation alone",
		phases: GenerateOnly,
		want: map[string]int64{
			"weights (f32 master)": 4 * 1992, "KV cache": 2 * 2 * 2 * 1 * 4 * 32 * 4,
			"prefill workspace": 2 * 6 * 736, "logits": 2 * 2 * 100 * 4, "Go runtime and GC": base + 4096,
		},
		absent: []string{"gradients", "optimizer (AdamW)", "activations", "optimizer update"},
		peak:   4*1992 + 4096 + 2*6*736 + 1600 + base + 4096,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Estimate(Request{
				Model: planModel(100, 8, 16, 2, 2, 1, 4),
				Train: Training{BatchSize: 2, MaxPromptLength: 6, MaxCompletionLength: 4, NumGenerations: 2, Phases: tc.phases},
			})
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int64{}
			for _, it := range p.Items {
				got[it.Name] = it.Bytes
			}
			for name, want := range tc.want {
				if g, ok := got[name]; !ok || g != want {
					t.Errorf("%s = %d (present %v), want %d", name, g, ok, want)
				}
			}
			for _, name := range tc.absent {
				if _, ok := got[name]; ok {
					t.Errorf("%s is in the plan", name)
				}
			}
			if p.Peak != tc.peak {
				t.Errorf("peak %d, want %d", p.Peak, tc.peak)
			}
			// The advice names only what the phase has.
			msg := (&OutOfMemoryError{Plan: p, Available: 1, Source: "test"}).Error()
			if strings.Contains(msg, "num_generations") {
				t.Errorf("advice names num_generations without generation in training: %s", msg)
			}
			if tc.phases == GenerateOnly && (strings.Contains(msg, "gradient_checkpointing") || !strings.Contains(msg, "the rows generated at once (2)")) {
				t.Errorf("advice for generation: %s", msg)
			}
		})
	}
}
