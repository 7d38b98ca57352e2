package gguf

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Ollama's media types of a model's layers (the manifest's
// layers[].mediaType).
const (
	ollamaModelLayer    = "application/vnd.ollama.image.model"
	ollamaTemplateLayer = "application/vnd.ollama.image.template"
	ollamaParamsLayer   = "application/vnd.ollama.image.params"
	ollamaSystemLayer   = "application/vnd.ollama.image.system"
	ollamaAdapterLayer  = "application/vnd.ollama.image.adapter"
	ollamaProjLayer     = "application/vnd.ollama.image.projector"
)

// ErrOllamaModel is returned (wrapped) when a model is not in Ollama's
// store or its manifest does not name a model file.
var ErrOllamaModel = errors.New("gguf: not an Ollama model")

// OllamaModel is a model in Ollama's local store, found by FindOllama.
type OllamaModel struct {
	// Name is the full name: host/namespace/model:tag.
	Name string
	// Manifest is the manifest file's path.
	Manifest string
	// Model is the GGUF file (the model layer's blob).
	Model string
	// Template is Ollama's prompt template (Go text/template syntax), and
	// System the system prompt, when the manifest has them.
	Template, System string
	// Params are the Modelfile's PARAMETERs (temperature, top_p, stop, ...).
	Params map[string]any
}

// OllamaModelsDir is the folder Ollama keeps models in: $OLLAMA_MODELS,
// else ~/.ollama/models.
func OllamaModelsDir() (string, error) {
	if d := os.Getenv("OLLAMA_MODELS"); d != "" {
		return d, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return "", fmt.Errorf("gguf: the Ollama models folder: %w (set OLLAMA_MODELS)", err)
	}
	return filepath.Join(home, ".ollama", "models"), nil
}

var (
	ollamaPart = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
	ollamaHost = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9.-]{0,252}(:[0-9]{1,5})?$`)
)

// ollamaPath splits a model name the way Ollama does ([host/][namespace/]
// model[:tag], defaults registry.ollama.ai, library and latest) into the
// parts of its manifest's path.
func ollamaPath(name string) ([]string, error) {
	rest, tag := name, "latest"
	if i := strings.LastIndex(name, ":"); i > strings.LastIndex(name, "/") {
		rest, tag = name[:i], name[i+1:]
	}
	parts := strings.Split(rest, "/")
	switch len(parts) {
	case 1:
		parts = []string{"registry.ollama.ai", "library", parts[0]}
	case 2:
		parts = []string{"registry.ollama.ai", parts[0], parts[1]}
	case 3:
	default:
		return nil, fmt.Errorf("%w: %q is not a model name ([host/][namespace/]model[:tag])", ErrOllamaModel, name)
	}
	parts = append(parts, tag)
	for i, p := range parts {
		// The host may carry a port; nothing may climb out of the store.
		ok := ollamaPart.MatchString(p) || i == 0 && ollamaHost.MatchString(p)
		if !ok || strings.Trim(p, ".") == "" {
			return nil, fmt.Errorf("%w: %q is not a model name ([host/][namespace/]model[:tag])", ErrOllamaModel, name)
		}
	}
	return parts, nil
}

// FindOllama finds the model name ("smollm2:135m", "user/model:tag") in
// Ollama's store at dir ("" means OllamaModelsDir): its manifest, its GGUF
// blob, and its template, system prompt and parameters. The blob's size
// is checked against the manifest; an adapter or projector layer (a model
// made of more than one file) is an error.
func FindOllama(name, dir string) (*OllamaModel, error) {
	if dir == "" {
		var err error
		if dir, err = OllamaModelsDir(); err != nil {
			return nil, err
		}
	}
	parts, err := ollamaPath(name)
	if err != nil {
		return nil, err
	}
	full := strings.Join(parts[:3], "/") + ":" + parts[3]
	manifest := filepath.Join(append([]string{dir, "manifests"}, parts...)...)
	data, err := readSmall(manifest, 1<<20)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%w: %s is not in the store at %s (no %s; `ollama pull %s` first, or set OLLAMA_MODELS)", ErrOllamaModel, full, dir, manifest, name)
	}
	if err != nil {
		return nil, fmt.Errorf("gguf: Ollama manifest: %w", err)
	}
	var m struct {
		Layers []struct {
			MediaType string `json:"mediaType"`
			Digest    string `json:"digest"`
			Size      int64  `json:"size"`
		} `json:"layers"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%w: manifest %s: %v", ErrOllamaModel, manifest, err)
	}
	out := &OllamaModel{Name: full, Manifest: manifest}
	for _, l := range m.Layers {
		blob, err := ollamaBlob(dir, l.Digest)
		if err != nil {
			return nil, fmt.Errorf("%w: manifest %s: %v", ErrOllamaModel, manifest, err)
		}
		switch l.MediaType {
		case ollamaModelLayer:
			if out.Model != "" {
				return nil, fmt.Errorf("%w: manifest %s lists two model layers", ErrOllamaModel, manifest)
			}
			st, err := os.Stat(blob)
			if err != nil {
				return nil, fmt.Errorf("gguf: %s's model blob: %w", full, err)
			}
			if st.Size() != l.Size {
				return nil, fmt.Errorf("%w: %s's model blob %s holds %d bytes, the manifest says %d (an interrupted pull? `ollama pull %s` again)", ErrOllamaModel, full, blob, st.Size(), l.Size, name)
			}
			out.Model = blob
		case ollamaTemplateLayer, ollamaSystemLayer, ollamaParamsLayer:
			b, err := readSmall(blob, 1<<20)
			if err != nil {
				return nil, fmt.Errorf("gguf: %s: %w", full, err)
			}
			switch l.MediaType {
			case ollamaTemplateLayer:
				out.Template = string(b)
			case ollamaSystemLayer:
				out.System = string(b)
			default:
				if err := json.Unmarshal(b, &out.Params); err != nil {
					return nil, fmt.Errorf("%w: %s's parameters %s: %v", ErrOllamaModel, full, blob, err)
				}
			}
		case ollamaAdapterLayer, ollamaProjLayer:
			return nil, fmt.Errorf("%w: %s has a layer of type %s: grpokit imports a model that is one GGUF file (no adapter or vision projector)", ErrUnsupported, full, l.MediaType)
		}
	}
	if out.Model == "" {
		return nil, fmt.Errorf("%w: manifest %s has no layer of type %s", ErrOllamaModel, manifest, ollamaModelLayer)
	}
	return out, nil
}

var digestRE = regexp.MustCompile(`^sha256[:-][0-9a-f]{64}$`)

// ollamaBlob is the path of a blob by digest: blobs/sha256-HEX (older
// stores: sha256:HEX).
func ollamaBlob(dir, digest string) (string, error) {
	if !digestRE.MatchString(digest) {
		return "", fmt.Errorf("digest %q is not sha256:<64 hex digits>", digest)
	}
	p := filepath.Join(dir, "blobs", "sha256-"+digest[7:])
	if _, err := os.Stat(p); err == nil {
		return p, nil
	}
	if old := filepath.Join(dir, "blobs", "sha256:"+digest[7:]); old != p {
		if _, err := os.Stat(old); err == nil {
			return old, nil
		}
	}
	return p, nil
}

// readSmall reads a regular file of at most limit bytes.
func readSmall(path string, limit int64) ([]byte, error) {
	f, err := openRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s is larger than %d bytes", path, limit)
	}
	return b, nil
}

// Generation returns the model's sampling parameters as
// generation_config.json's defaults (nil when it sets none).
func (o *OllamaModel) Generation() *GenerationDefaults {
	g := &GenerationDefaults{}
	num := func(k string) *float64 {
		if v, ok := o.Params[k].(float64); ok {
			return &v
		}
		return nil
	}
	g.Temperature, g.TopP, g.MinP, g.RepetitionPenalty = num("temperature"), num("top_p"), num("min_p"), num("repeat_penalty")
	if k := num("top_k"); k != nil {
		n := int(*k)
		g.TopK = &n
	}
	if g.Temperature != nil && *g.Temperature == 0 {
		f := false
		g.DoSample = &f
	}
	if *g == (GenerationDefaults{}) {
		return nil
	}
	return g
}
