package gguf

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/grpokit/grpokit/internal/jsonfile"
)

// GenerationDefaults are the sampling settings of a model's
// generation_config.json that an Ollama Modelfile can carry; nil fields
// were not set.
type GenerationDefaults struct {
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	// DoSample false means greedy decoding (written as temperature 0).
	DoSample *bool `json:"do_sample"`
}

// ReadGenerationDefaults reads dir/generation_config.json; a folder
// without one has no defaults (a nil result and no error).
func ReadGenerationDefaults(dir string) (*GenerationDefaults, error) {
	var g GenerationDefaults
	found, err := jsonfile.ReadOptional(filepath.Join(dir, "generation_config.json"), &g)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	if !found {
		return nil, nil
	}
	return &g, nil
}

// chatFormat is a chat template family Ollama's Go templates can express.
type chatFormat struct {
	// marker identifies the family in a Jinja chat template.
	marker string
	// template is the Modelfile's TEMPLATE (Ollama's Go text/template).
	template string
	// stops are the strings that end a reply.
	stops []string
}

var chatFormats = []chatFormat{
	{marker: "<|im_start|>", stops: []string{"<|im_end|>", "<|im_start|>"}, template: `{{- if .System }}<|im_start|>system
{{ .System }}<|im_end|>
{{ end }}
{{- range .Messages }}<|im_start|>{{ .Role }}
{{ .Content }}<|im_end|>
{{ end }}<|im_start|>assistant
`},
	{marker: "<|start_header_id|>", stops: []string{"<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>"}, template: `{{- if .System }}<|start_header_id|>system<|end_header_id|>

{{ .System }}<|eot_id|>
{{- end }}
{{- range .Messages }}<|start_header_id|>{{ .Role }}<|end_header_id|>

{{ .Content }}<|eot_id|>
{{- end }}<|start_header_id|>assistant<|end_header_id|>

`},
	{marker: "<start_of_turn>", stops: []string{"<end_of_turn>"}, template: `{{- range $i, $_ := .Messages }}
{{- $last := eq (len (slice $.Messages $i)) 1 }}
{{- if or (eq .Role "user") (eq .Role "system") }}<start_of_turn>user
{{ .Content }}<end_of_turn>
{{ if $last }}<start_of_turn>model
{{ end }}
{{- else if eq .Role "assistant" }}<start_of_turn>model
{{ .Content }}{{ if not $last }}<end_of_turn>
{{ end }}
{{- end }}
{{- end }}`},
}

// ModelfileOptions are the settings of a Modelfile besides the model's
// vocabulary and sampling defaults.
type ModelfileOptions struct {
	// Name is the Modelfile's own file name, for its comment saying how to
	// use it; default "Modelfile".
	Name string
	// PlainPrompts writes TEMPLATE """{{ .Prompt }}""": the prompt goes to
	// the model as it is, without the chat template, as it did in training
	// on plain-text prompts (model.PlainPrompts; Export reads it from the
	// model's folder).
	PlainPrompts bool
}

// plainTemplate is the Modelfile TEMPLATE of a model trained on plain
// prompts: the prompt, as it is.
const plainTemplate = "{{ .Prompt }}"

// ModelfileName is the Modelfile name beside the GGUF file ggufPath:
// its base name with ".Modelfile" in place of ".gguf" ("x.gguf" →
// "x.Modelfile"), so that exports of several models into one folder do
// not collide.
func ModelfileName(ggufPath string) string {
	base := filepath.Base(ggufPath)
	if ext := filepath.Ext(base); strings.EqualFold(ext, ".gguf") {
		base = strings.TrimSuffix(base, ext)
	}
	return base + ".Modelfile"
}

// Modelfile returns an Ollama Modelfile for the GGUF file ggufName (a
// path relative to the Modelfile's folder): FROM; a TEMPLATE: the prompt
// as it is with o.PlainPrompts, else one in Ollama's syntax when the chat
// template is of a family it recognizes (ChatML, Llama 3, Gemma;
// otherwise Ollama reads the Jinja template stored in the file); the stop
// strings; and gen's sampling defaults.
func Modelfile(ggufName string, v *Vocab, gen *GenerationDefaults, o ModelfileOptions) string {
	var b strings.Builder
	name := o.Name
	if name == "" {
		name = "Modelfile"
	}
	fmt.Fprintf(&b, "# Ollama: ollama create NAME -f %s, then ollama run NAME\n", name)
	fmt.Fprintf(&b, "FROM ./%s\n", filepath.ToSlash(ggufName))
	var stops []string
	if v.Placeholder {
		b.WriteString("# This model had no tokenizer: its vocabulary is a placeholder, so text in and out is meaningless.\n")
	}
	if o.PlainPrompts {
		b.WriteString("# Trained on plain-text prompts: each prompt goes to the model as it is, without the chat template.\n")
		fmt.Fprintf(&b, "TEMPLATE \"\"\"%s\"\"\"\n", plainTemplate)
	} else {
		for _, f := range chatFormats {
			if v.ChatTemplate != "" && strings.Contains(v.ChatTemplate, f.marker) {
				fmt.Fprintf(&b, "TEMPLATE \"\"\"%s\"\"\"\n", f.template)
				stops = append(stops, f.stops...)
				break
			}
		}
	}
	if v.EOS >= 0 && v.EOS < len(v.Tokens) && v.Types[v.EOS] == tokenControl {
		if s := v.Tokens[v.EOS]; !slices.Contains(stops, s) {
			stops = append(stops, s)
		}
	}
	for _, s := range stops {
		fmt.Fprintf(&b, "PARAMETER stop %s\n", strconv.Quote(s))
	}
	if gen != nil {
		param := func(name string, v float64) {
			fmt.Fprintf(&b, "PARAMETER %s %s\n", name, strconv.FormatFloat(v, 'g', -1, 64))
		}
		if gen.DoSample != nil && !*gen.DoSample {
			param("temperature", 0)
		} else if gen.Temperature != nil {
			param("temperature", *gen.Temperature)
		}
		if gen.TopP != nil {
			param("top_p", *gen.TopP)
		}
		if gen.TopK != nil {
			param("top_k", float64(*gen.TopK))
		}
		if gen.MinP != nil {
			param("min_p", *gen.MinP)
		}
		if gen.RepetitionPenalty != nil {
			param("repeat_penalty", *gen.RepetitionPenalty)
		}
	}
	return b.String()
}

// WriteModelfile writes Modelfile(ggufName, v, gen, o) to path (o.Name
// defaults to path's base name) through a temporary file renamed into
// place; an existing path is an error unless overwrite.
func WriteModelfile(path, ggufName string, v *Vocab, gen *GenerationDefaults, o ModelfileOptions, overwrite bool) error {
	if err := checkOutput(path, overwrite); err != nil {
		return err
	}
	if o.Name == "" {
		o.Name = filepath.Base(path)
	}
	return writeAtomic(path, overwrite, func(f *os.File) error {
		_, err := f.WriteString(Modelfile(ggufName, v, gen, o))
		return err
	})
}
