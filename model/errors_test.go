package model

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/internal/backend"
)

// rawSafetensors builds a file from a literal header and n data bytes.
func rawSafetensors(header string, n int) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(make([]byte, n))
	return b.Bytes()
}

func TestSafetensorsHeaderErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		file []byte
		want string
	}{
		{"empty file", nil, "safetensors: read header length: EOF"},
		{"length past end", append(binary.LittleEndian.AppendUint64(nil, 1000), '{', '}'), "header length 1000 exceeds file size 10"},
		{"not json", rawSafetensors("{nope", 0), "header is not a JSON object"},
		{"offsets past end", rawSafetensors(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, 4),
			`tensor "a": data_offsets [0, 8] outside the 4 data bytes`},
		{"wrong byte count", rawSafetensors(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, 8),
			`tensor "a": 8 bytes for F32 shape [3], want 12`},
		{"bad dtype", rawSafetensors(`{"a":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}}`, 8),
			`tensor "a": unsupported dtype "I64" (want F32, BF16 or F16)`},
		{"overlap", rawSafetensors(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, 8),
			`overlap`},
		{"negative dim", rawSafetensors(`{"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,0]}}`, 0), `bad shape [-1]`},
		{"reversed offsets", rawSafetensors(`{"a":{"dtype":"BF16","shape":[0],"data_offsets":[4,0]}}`, 4), `data_offsets [4, 0]`},
		{"unknown field", rawSafetensors(`{"a":{"dtype":"F32","shape":[],"data_offsets":[0,4],"x":1}}`, 4), `unknown field "x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSafetensorsHeader(bytes.NewReader(tc.file), int64(len(tc.file)))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			t.Log(err)
		})
	}
}

func TestSafetensorsRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.safetensors")
	in := []NamedTensor{{"b", []int{2, 2}, []float32{1, -2, 3.5, 4}}, {"a", []int{}, []float32{7}}}
	if err := WriteSafetensors(path, in); err != nil {
		t.Fatal(err)
	}
	out, err := ReadSafetensors(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 2 || out[0].Name != "a" || out[0].Data[0] != 7 || out[1].Data[2] != 3.5 || len(out[1].Shape) != 2 {
		t.Fatalf("round trip gave %+v", out)
	}
}

func TestBF16AndF16Decoding(t *testing.T) {
	// bf16 0x3FC0 = 1.5; f16 0x3E00 = 1.5, 0xC000 = -2.
	if got := decodeF32("BF16", []byte{0xC0, 0x3F}); got[0] != 1.5 {
		t.Errorf("BF16 = %v", got)
	}
	if got := decodeF32("F16", []byte{0x00, 0x3E, 0x00, 0xC0}); got[0] != 1.5 || got[1] != -2 {
		t.Errorf("F16 = %v", got)
	}
}

// copyCase copies a golden case's config.json and weights to a temp dir,
// letting edit change the config text first.
func copyCase(t *testing.T, edit func(cfg string) string) string {
	t.Helper()
	return copyGolden(t, "qwen2-tiny", edit)
}

// copyGolden copies golden case name's config.json (edited) and
// model.safetensors into a temporary directory.
func copyGolden(t *testing.T, name string, edit func(cfg string) string) string {
	t.Helper()
	src := loadGolden(t, name).dir
	dst := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(src, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "config.json"), []byte(edit(string(cfg))), 0o644); err != nil {
		t.Fatal(err)
	}
	w, _ := os.ReadFile(filepath.Join(src, "model.safetensors"))
	if err := os.WriteFile(filepath.Join(dst, "model.safetensors"), w, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestLoadErrors(t *testing.T) {
	same := func(s string) string { return s }
	for _, tc := range []struct {
		name  string
		dir   func(t *testing.T) string
		want  string
		isErr error
	}{
		{"missing dir", func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") }, "model: read config: open", os.ErrNotExist},
		{"unknown model_type", func(t *testing.T) string {
			return copyCase(t, func(s string) string { return strings.Replace(s, `"qwen2"`, `"mamba"`, 1) })
		}, `model: unsupported architecture: model_type "mamba" (want one of gemma3, gemma3_text, llama, qwen2, qwen3)`, ErrUnsupportedArch},
		{"known relative", func(t *testing.T) string {
			return copyCase(t, func(s string) string { return strings.Replace(s, `"qwen2"`, `"qwen3_moe"`, 1) })
		}, `model_type "qwen3_moe" (Qwen3 mixture of experts) is a known relative that is not implemented; supported: gemma3, gemma3_text, llama, qwen2, qwen3`, ErrUnsupportedArch},
		{"bad heads", func(t *testing.T) string {
			return copyCase(t, func(s string) string {
				return strings.Replace(s, `"num_key_value_heads": 2`, `"num_key_value_heads": 3`, 1)
			})
		}, "num_attention_heads 4 is not a multiple of num_key_value_heads 3", nil},
		{"shape disagrees with config", func(t *testing.T) string {
			return copyCase(t, func(s string) string {
				return strings.Replace(s, `"intermediate_size": 172`, `"intermediate_size": 160`, 1)
			})
		}, `model: weight "model.layers.0.mlp.gate_proj.weight" has shape [172 64], config.json implies [160 64]`, ErrShapeMismatch},
		{"missing weights joined", func(t *testing.T) string {
			return dropLayerWeights(t, copyCase(t, same), 1)
		}, `model: missing weight "model.layers.1.post_attention_layernorm.weight" (want shape [64])`, ErrMissingWeight},
		{"more layers than the weights", func(t *testing.T) string {
			return copyCase(t, func(s string) string {
				return strings.Replace(s, `"num_hidden_layers": 2`, `"num_hidden_layers": 3`, 1)
			})
		}, `config.json has num_hidden_layers = 3 but the weights hold 2 layers`, nil},
		{"untied head missing", func(t *testing.T) string {
			d := copyCase(t, same)
			ts, _ := ReadSafetensors(filepath.Join(d, "model.safetensors"))
			var keep []NamedTensor
			for _, x := range ts {
				if x.Name != "lm_head.weight" {
					keep = append(keep, x)
				}
			}
			WriteSafetensors(filepath.Join(d, "model.safetensors"), keep)
			return d
		}, `missing weight "lm_head.weight"`, ErrMissingWeight},
		{"no weights file", func(t *testing.T) string {
			d := copyCase(t, same)
			os.Remove(filepath.Join(d, "model.safetensors"))
			return d
		}, "no model.safetensors or model.safetensors.index.json", nil},
		{"PyTorch weights only", func(t *testing.T) string {
			d := copyCase(t, same)
			os.Remove(filepath.Join(d, "model.safetensors"))
			os.WriteFile(filepath.Join(d, "pytorch_model.bin"), []byte("PK"), 0o644)
			return d
		}, "it has pytorch_model.bin, PyTorch's format, which grpokit does not read: write safetensors", nil},
		{"truncated weights", func(t *testing.T) string {
			d := copyCase(t, same)
			p := filepath.Join(d, "model.safetensors")
			b, _ := os.ReadFile(p)
			os.WriteFile(p, b[:len(b)-100], 0o644)
			return d
		}, "outside the", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(tc.dir(t), nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
			if tc.isErr != nil && !errors.Is(err, tc.isErr) {
				t.Errorf("errors.Is(err, %v) = false", tc.isErr)
			}
			t.Log(err)
		})
	}
}

// dropLayerWeights removes the weights of decoder layer i from the
// checkpoint in d but its input_layernorm (so the header still holds the
// layer), and returns d.
func dropLayerWeights(t *testing.T, d string, i int) string {
	t.Helper()
	p := filepath.Join(d, "model.safetensors")
	ts, err := ReadSafetensors(p)
	if err != nil {
		t.Fatal(err)
	}
	prefix := fmt.Sprintf("model.layers.%d.", i)
	var keep []NamedTensor
	for _, x := range ts {
		if !strings.HasPrefix(x.Name, prefix) || x.Name == prefix+"input_layernorm.weight" {
			keep = append(keep, x)
		}
	}
	if err := WriteSafetensors(p, keep); err != nil {
		t.Fatal(err)
	}
	return d
}

func TestLoadMissingWeightsAreJoined(t *testing.T) {
	d := dropLayerWeights(t, copyCase(t, func(s string) string { return s }), 1)
	_, err := Load(d, nil)
	if n := strings.Count(err.Error(), "missing weight"); n != 11 {
		t.Errorf("%d missing weights reported, want 11 (all of layer 1 but its input_layernorm):\n%v", n, err)
	}
	var we *WeightError
	if !errors.As(err, &we) || we.Got != nil {
		t.Errorf("errors.As(*WeightError) = %v", we)
	}
}

func TestShardedLoad(t *testing.T) {
	g := loadGolden(t, "llama-tiny")
	ts, err := ReadSafetensors(filepath.Join(g.dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	cfg, _ := os.ReadFile(filepath.Join(g.dir, "config.json"))
	os.WriteFile(filepath.Join(d, "config.json"), cfg, 0o644)
	half := len(ts) / 2
	index := `{"metadata":{},"weight_map":{`
	for i, x := range ts {
		shard := "model-00001-of-00002.safetensors"
		if i >= half {
			shard = "model-00002-of-00002.safetensors"
		}
		if i > 0 {
			index += ","
		}
		index += `"` + x.Name + `":"` + shard + `"`
	}
	index += "}}"
	os.WriteFile(filepath.Join(d, "model.safetensors.index.json"), []byte(index), 0o644)
	WriteSafetensors(filepath.Join(d, "model-00001-of-00002.safetensors"), ts[:half])
	WriteSafetensors(filepath.Join(d, "model-00002-of-00002.safetensors"), ts[half:])
	m, err := Load(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := m.Logits(g.batch())
	if err != nil {
		t.Fatal(err)
	}
	checkClose(t, "sharded logits", got, g.tensors["logits"].Data, g.JSON.AttentionMask, 512, 2e-4, 2e-4)
}

func TestSaveLoadRoundTrip(t *testing.T) {
	cfg := Config{ModelType: "llama", VocabSize: 40, HiddenSize: 16, IntermediateSize: 24, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, MaxPositionEmbeddings: 64, RMSNormEps: 1e-5, RopeTheta: 10000,
		HiddenAct: "silu", EOSTokenIDs: []int{2, 3}, BOSTokenID: 1,
		RopeScaling: &RopeScaling{RopeType: "llama3", Factor: 8, LowFreqFactor: 1, HighFreqFactor: 4, OriginalMaxPositionEmbeddings: 32}}
	cfg.HeadDim = 8
	m, err := New(cfg, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := t.TempDir()
	if err := m.Save(d); err != nil {
		t.Fatal(err)
	}
	m2, err := Load(d, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := m2.Config(); c.RopeScaling == nil || c.RopeScaling.Factor != 8 || len(c.EOSTokenIDs) != 2 || c.TieWordEmbeddings {
		t.Errorf("config round trip: %+v", c)
	}
	b := LeftPad([][]int{{1, 5, 6}, {1, 7}}, 0, 0)
	x, err := m.Logits(b)
	if err != nil {
		t.Fatal(err)
	}
	y, err := m2.Logits(b)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if x[i] != y[i] {
			t.Fatalf("logit %d: %v vs %v", i, x[i], y[i])
		}
	}
}

func TestBatchErrors(t *testing.T) {
	m := tinyModel(t)
	for _, tc := range []struct {
		name string
		b    Batch
		want string
	}{
		{"empty", Batch{}, "model: empty batch"},
		{"ragged", Batch{IDs: [][]int{{1, 2}, {1}}, Mask: [][]int{{1, 1}, {1}}}, "ids row 1 has length 1, want 2"},
		{"bad id", Batch{IDs: [][]int{{1, 600}}, Mask: [][]int{{1, 1}}}, "ids row 0: value 600 out of range"},
		{"bad mask", Batch{IDs: [][]int{{1, 2}}, Mask: [][]int{{1, 2}}}, "mask row 0: value 2 out of range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := m.Logits(tc.b)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestNamesRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, scope, v string }{
		{"model.layers.3.self_attn.q_proj.weight", "/model/layers/3/self_attn/q_proj", "weight"},
		{"model.embed_tokens.weight", "/model/embed_tokens", "weight"},
		{"lm_head.weight", "/lm_head", "weight"},
		{"model.layers.0.self_attn.q_proj.lora_A.weight", "/model/layers/0/self_attn/q_proj/lora_A", "weight"},
		{"model.layers.1.self_attn.k_proj.bias", "/model/layers/1/self_attn/k_proj", "bias"},
	} {
		scope, v, err := ScopeOf(tc.name)
		if err != nil || scope != tc.scope || v != tc.v {
			t.Errorf("ScopeOf(%q) = %q, %q, %v", tc.name, scope, v, err)
		}
		back, err := NameOf(scope, v)
		if err != nil || back != tc.name {
			t.Errorf("NameOf(%q, %q) = %q, %v", scope, v, back, err)
		}
	}
	for _, bad := range []string{"weight", "a..b", "a/b.c", ""} {
		if _, _, err := ScopeOf(bad); err == nil {
			t.Errorf("ScopeOf(%q) accepted", bad)
		}
	}
	if _, err := NameOf("noslash", "w"); err == nil {
		t.Error("NameOf accepted a relative scope")
	}
}

// TestDefaultBackendBySize: with no backend named, a small model runs its
// ops side by side and a large one one at a time (backend.ResolveFor).
func TestDefaultBackendBySize(t *testing.T) {
	t.Setenv(backend.EnvVar, "")
	tiny := Config{ModelType: "llama", VocabSize: 40, HiddenSize: 16, IntermediateSize: 24, NumHiddenLayers: 1,
		NumAttentionHeads: 2, NumKeyValueHeads: 1, MaxPositionEmbeddings: 64, RMSNormEps: 1e-5, RopeTheta: 10000,
		HiddenAct: "silu"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"tiny", tiny, backend.DefaultGoSmall},
		{"SmolLM2-135M", SmolLM2Shaped(), backend.DefaultGo},
	} {
		m, err := newEmpty(tc.cfg, nil)
		if err != nil {
			t.Fatal(err)
		}
		if m.Backend() != backend.Must(tc.want) {
			t.Errorf("%s (%d parameters): backend is not %q", tc.name, tc.cfg.NumParams(), tc.want)
		}
	}
}
