package grpo

import (
	"bytes"
	"encoding/gob"
	"encoding/json"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// FuzzCheckpointReaders feeds arbitrary bytes to every checkpoint reader:
// the trainer state, variables.gob and rollouts.gob. Each
// must return a value or an error, never panic or allocate without bound.
func FuzzCheckpointReaders(f *testing.F) {
	state, _ := json.Marshal(trainerState{Format: 1, Step: 3, NumTokens: 40, RunID: "ab", Config: DefaultConfig()})
	f.Add(state)
	var vars bytes.Buffer
	enc := gob.NewEncoder(&vars)
	_ = enc.Encode(2)
	for i, tt := range []*tensors.Tensor{
		tensors.FromFlatDataAndDimensions([]float32{1, 2, 3, 4, 5, 6}, 2, 3),
		tensors.FromScalar(int64(7)),
	} {
		_ = enc.Encode([2]string{"/scope", string(rune('a' + i))})
		_ = tt.GobSerialize(enc)
	}
	f.Add(vars.Bytes())
	var rolls bytes.Buffer
	_ = gob.NewEncoder(&rolls).Encode(&rolloutBatch{
		Index: 1,
		Rows:  []*row{{Prompt: "say cat", Completion: "cat", Rewards: []float64{1}, Reward: 1, PromptIDs: []int32{3, 4}, IDs: []int32{4, 1}}},
		Micro: []*microBatch{{B: 1, P: 2, C: 2, Rows: 1, Tokens: []int32{3, 4, 4, 1}, Mask: []int32{1, 1, 1, 1},
			LossMask: []float32{1, 1}, Weights: []float32{0.5, 0.5}, Adv: []float32{1}}},
		Metrics: map[string]float64{"reward": 1},
	})
	f.Add(rolls.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		if st, err := parseState(data); err == nil && (st.Step < 0 || st.Config.NumIterations < 1) {
			t.Fatalf("state %+v accepted", st)
		}
		if vs, err := decodeVariables(bytes.NewReader(data), variablesFile); err == nil {
			for _, v := range vs {
				if v.value == nil {
					t.Fatal("nil tensor without an error")
				}
			}
		}
		if buf, err := decodeRollouts(bytes.NewReader(data)); err == nil {
			for _, mb := range buf.Micro {
				if mb.check() != nil {
					t.Fatal("bad micro-batch accepted")
				}
			}
		}
	})
}
