package gguf

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/internal/sharedtest"
)

// ollamaStore lays out an Ollama models folder under dir holding model
// (a GGUF file) as name (manifest path parts), with a template and
// parameters layer, the way `ollama create` writes one: blobs named
// sha256-HEX by content, a manifest listing them. It returns the
// manifest's path.
func ollamaStore(t *testing.T, dir, model string, parts []string, extra ...map[string]any) string {
	t.Helper()
	blob := func(data []byte) (string, int64) {
		sum := sha256.Sum256(data)
		d := "sha256:" + hex.EncodeToString(sum[:])
		if err := os.MkdirAll(filepath.Join(dir, "blobs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "blobs", "sha256-"+d[7:]), data, 0o644); err != nil {
			t.Fatal(err)
		}
		return d, int64(len(data))
	}
	gg, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	layer := func(mt string, data []byte) map[string]any {
		d, n := blob(data)
		return map[string]any{"mediaType": mt, "digest": d, "size": n}
	}
	layers := []map[string]any{
		layer(ollamaModelLayer, gg),
		layer(ollamaTemplateLayer, []byte("{{ .Prompt }}")),
		layer(ollamaParamsLayer, []byte(`{"temperature": 0.6, "top_k": 20, "stop": ["<|im_end|>"]}`)),
	}
	layers = append(layers, extra...)
	cfgDigest, cfgSize := blob([]byte(`{"model_format":"gguf"}`))
	m := map[string]any{"schemaVersion": 2, "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
		"config": map[string]any{"mediaType": "application/vnd.docker.container.image.v1+json", "digest": cfgDigest, "size": cfgSize},
		"layers": layers}
	b, _ := json.Marshal(m)
	p := filepath.Join(append([]string{dir, "manifests"}, parts...)...)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFindOllama(t *testing.T) {
	tmp := t.TempDir()
	model := filepath.Join(tmp, "tiny.gguf")
	if _, err := Export(context.Background(), Source{ModelDir: sharedtest.Dir(t, "golden", "llama-tiny")}, model, ExportOptions{}); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(tmp, "models")
	ollamaStore(t, store, model, []string{"registry.ollama.ai", "library", "tiny", "latest"})
	ollamaStore(t, store, model, []string{"registry.ollama.ai", "me", "tiny", "v1"})
	ollamaStore(t, store, model, []string{"localhost:8080", "me", "tiny", "q4"})
	want, _ := os.ReadFile(model)
	for _, name := range []string{"tiny", "tiny:latest", "me/tiny:v1", "localhost:8080/me/tiny:q4"} {
		t.Run(name, func(t *testing.T) {
			m, err := FindOllama(name, store)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := os.ReadFile(m.Model)
			if string(got) != string(want) {
				t.Errorf("model blob %s is not the stored file", m.Model)
			}
			if m.Template != "{{ .Prompt }}" {
				t.Errorf("template %q", m.Template)
			}
			g := m.Generation()
			if g == nil || g.Temperature == nil || *g.Temperature != 0.6 || g.TopK == nil || *g.TopK != 20 {
				t.Errorf("generation defaults %+v", g)
			}
		})
	}
	t.Setenv("OLLAMA_MODELS", store)
	if _, err := FindOllama("tiny", ""); err != nil {
		t.Errorf("OLLAMA_MODELS: %v", err)
	}

	// A pull cut short: the blob is shorter than the manifest says.
	cut := filepath.Join(tmp, "cut")
	ollamaStore(t, cut, model, []string{"registry.ollama.ai", "library", "tiny", "latest"})
	sum := sha256.Sum256(want)
	if err := os.Truncate(filepath.Join(cut, "blobs", "sha256-"+hex.EncodeToString(sum[:])), 100); err != nil {
		t.Fatal(err)
	}
	adapter := filepath.Join(tmp, "adapter")
	ollamaStore(t, adapter, model, []string{"registry.ollama.ai", "library", "tiny", "latest"},
		map[string]any{"mediaType": ollamaAdapterLayer, "digest": "sha256:" + hex.EncodeToString(sum[:]), "size": len(want)})
	for _, c := range []struct{ name, dir, want string }{
		{"nope", store, "not in the store"},
		{"tiny:q8", store, "ollama pull tiny:q8"},
		{"../../etc/passwd", store, "not a model name"},
		{"a/b/c/d", store, "not a model name"},
		{"tiny", cut, "the manifest says"},
		{"tiny", adapter, "no adapter or vision projector"},
	} {
		_, err := FindOllama(c.name, c.dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("FindOllama(%q): %v, want an error saying %q", c.name, err, c.want)
		}
		if c.dir == store && !errors.Is(err, ErrOllamaModel) {
			t.Errorf("FindOllama(%q): %v does not wrap ErrOllamaModel", c.name, err)
		}
	}
}
