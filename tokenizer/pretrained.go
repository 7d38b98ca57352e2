package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"

	"github.com/grpokit/grpokit/internal/jsonfile"
)

// Pretrained is a tokenizer loaded from a Hugging Face model folder with
// the ids a trainer needs to pad and stop, and the chat templates.
type Pretrained struct {
	// Tokenizer encodes and decodes.
	Tokenizer *Tokenizer
	// BOS is the beginning-of-sequence id, -1 if the model has none (Qwen).
	BOS int
	// EOS lists the ids that end generation: tokenizer_config's eos_token
	// first, then generation_config's eos_token_id entries. May be empty.
	EOS []int
	// PAD is pad_token's id, else EOS[0], else 0.
	PAD int
	// BOSToken, EOSToken and PADToken are the token strings ("" if unset);
	// templates see the first two as bos_token and eos_token.
	BOSToken, EOSToken, PADToken string
	// Templates holds the chat templates by name; the main one is "default".
	Templates map[string]*ChatTemplate

	files map[string][]byte // the files LoadDir read, for WriteFiles
}

// LoadDir reads tokenizer.json, tokenizer_config.json (optional) and
// generation_config.json (optional) from dir. A chat_template.jinja file,
// as newer transformers write, is used when tokenizer_config has none.
func LoadDir(dir string) (*Pretrained, error) {
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(filepath.Join(dir, "tokenizer.model")); err == nil {
			return nil, fmt.Errorf("tokenizer: %s has a SentencePiece tokenizer.model but no tokenizer.json, the fast tokenizer's file "+
				"grpokit reads: write one with transformers (AutoTokenizer.from_pretrained(dir).save_pretrained(dir))", dir)
		}
	}
	p, err := loadFiles(filepath.Join(dir, "tokenizer.json"),
		filepath.Join(dir, "tokenizer_config.json"),
		filepath.Join(dir, "generation_config.json"))
	if err != nil {
		return nil, err
	}
	if _, ok := p.Templates["default"]; !ok {
		if b, err := os.ReadFile(filepath.Join(dir, "chat_template.jinja")); err == nil {
			ct, err := compileChatTemplate(string(b), filepath.Join(dir, "chat_template.jinja"), RenderLimits{})
			if err != nil {
				return nil, err
			}
			p.Templates["default"] = ct
		}
	}
	if p.files, err = readSources(dir); err != nil {
		return nil, err
	}
	return p, nil
}

// tokenizerConfig is the part of tokenizer_config.json used here.
type tokenizerConfig struct {
	BOSToken     json.RawMessage `json:"bos_token"`
	EOSToken     json.RawMessage `json:"eos_token"`
	PADToken     json.RawMessage `json:"pad_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
}

type generationConfig struct {
	BOSTokenID json.RawMessage `json:"bos_token_id"`
	EOSTokenID json.RawMessage `json:"eos_token_id"`
	PADTokenID json.RawMessage `json:"pad_token_id"`
}

func loadFiles(tokPath, cfgPath, genPath string) (*Pretrained, error) {
	tok, err := FromFile(tokPath)
	if err != nil {
		return nil, err
	}
	p := &Pretrained{Tokenizer: tok, BOS: -1, PAD: -1, Templates: map[string]*ChatTemplate{}}
	var cfg tokenizerConfig
	if err := readOptionalJSON(cfgPath, &cfg); err != nil {
		return nil, err
	}
	var gen generationConfig
	if err := readOptionalJSON(genPath, &gen); err != nil {
		return nil, err
	}
	return finishConfig(p, cfg, gen, cfgPath)
}

// finishConfig fills the special ids and templates of p; cfgPath only
// names the file in errors.
func finishConfig(p *Pretrained, cfg tokenizerConfig, gen generationConfig, cfgPath string) (*Pretrained, error) {
	genPath := "generation_config.json"
	tok := p.Tokenizer
	var err error
	fields := []struct {
		name string
		raw  json.RawMessage
		dst  *string
	}{{"bos_token", cfg.BOSToken, &p.BOSToken}, {"eos_token", cfg.EOSToken, &p.EOSToken}, {"pad_token", cfg.PADToken, &p.PADToken}}
	for _, f := range fields {
		s, err := tokenString(f.raw)
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %s: %s: %w", cfgPath, f.name, err)
		}
		*f.dst = s
	}
	lookup := func(field, s string) (int, error) {
		id, ok := tok.TokenToID(s)
		if !ok {
			return 0, fmt.Errorf("tokenizer: %s: %s %q: %w", cfgPath, field, s, ErrUnknownToken)
		}
		return id, nil
	}
	if p.BOSToken != "" {
		if p.BOS, err = lookup("bos_token", p.BOSToken); err != nil {
			return nil, err
		}
	} else if ids, err := idList(gen.BOSTokenID); err != nil {
		return nil, fmt.Errorf("tokenizer: %s: bos_token_id: %w", genPath, err)
	} else if len(ids) > 0 {
		p.BOS = ids[0]
	}
	if p.EOSToken != "" {
		id, err := lookup("eos_token", p.EOSToken)
		if err != nil {
			return nil, err
		}
		p.EOS = append(p.EOS, id)
	}
	genEOS, err := idList(gen.EOSTokenID)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: eos_token_id: %w", genPath, err)
	}
	for _, id := range genEOS {
		if !containsInt(p.EOS, id) {
			p.EOS = append(p.EOS, id)
		}
	}
	if p.PADToken != "" {
		if p.PAD, err = lookup("pad_token", p.PADToken); err != nil {
			return nil, err
		}
	} else if ids, err := idList(gen.PADTokenID); err == nil && len(ids) > 0 {
		p.PAD = ids[0]
	}
	if p.PAD < 0 {
		p.PAD = 0
		if len(p.EOS) > 0 {
			p.PAD = p.EOS[0]
		}
	}
	if err := p.parseTemplates(cfg.ChatTemplate, cfgPath); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Pretrained) parseTemplates(raw json.RawMessage, cfgPath string) error {
	if isNull(raw) {
		return nil
	}
	var one string
	if err := json.Unmarshal(raw, &one); err == nil {
		ct, err := compileChatTemplate(one, cfgPath+" chat_template", RenderLimits{})
		if err != nil {
			return err
		}
		p.Templates["default"] = ct
		return nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(raw, &named); err != nil {
		return fmt.Errorf("tokenizer: %s: chat_template: want a string or a list of {name, template}: %w", cfgPath, err)
	}
	for i, n := range named {
		ct, err := compileChatTemplate(n.Template, fmt.Sprintf("%s chat_template[%d] %q", cfgPath, i, n.Name), RenderLimits{})
		if err != nil {
			return err
		}
		p.Templates[n.Name] = ct
	}
	return nil
}

// ApplyChat renders the default chat template with bos_token and eos_token
// set (opts.Vars may override them).
func (p *Pretrained) ApplyChat(messages []Message, opts ChatOptions) (string, error) {
	ct, ok := p.Templates["default"]
	if !ok {
		return "", errors.New("tokenizer: model has no chat template")
	}
	vars := map[string]any{"bos_token": p.BOSToken, "eos_token": p.EOSToken}
	for k, v := range opts.Vars {
		vars[k] = v
	}
	opts.Vars = vars
	return ct.Apply(messages, opts)
}

// IsEOS reports whether id is one of the EOS ids.
func (p *Pretrained) IsEOS(id int) bool { return containsInt(p.EOS, id) }

// readOptionalJSON decodes the JSON file at path into v; a missing file
// leaves v as it is.
func readOptionalJSON(path string, v any) error {
	if _, err := jsonfile.ReadOptional(path, v); err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	return nil
}

// tokenString reads a token given as a string, an AddedToken object
// ({"content": ...}) or null.
func tokenString(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var obj struct {
		Content *string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil || obj.Content == nil {
		return "", errors.New("want a string or an object with \"content\"")
	}
	return *obj.Content, nil
}

// idList reads an int, a list of ints or null.
func idList(raw json.RawMessage) ([]int, error) {
	if isNull(raw) {
		return nil, nil
	}
	var one int
	if err := json.Unmarshal(raw, &one); err == nil {
		return []int{one}, nil
	}
	var many []int
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, errors.New("want an integer or a list of integers")
	}
	return many, nil
}

func containsInt(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// LoadFiles is LoadDir for files held in memory (name → contents, of the
// names LoadDir reads; tokenizer.json is required): a tokenizer made from
// another format, such as a GGUF file's vocabulary. source names the
// files in errors. WriteFiles writes the files back.
func LoadFiles(source string, files map[string][]byte) (*Pretrained, error) {
	data, ok := files["tokenizer.json"]
	if !ok {
		return nil, fmt.Errorf("tokenizer: %s: no tokenizer.json", source)
	}
	tok, err := FromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%w (%s)", err, source)
	}
	var cfg tokenizerConfig
	var gen generationConfig
	for name, v := range map[string]any{"tokenizer_config.json": &cfg, "generation_config.json": &gen} {
		if b, ok := files[name]; ok {
			if err := json.Unmarshal(b, v); err != nil {
				return nil, fmt.Errorf("tokenizer: %s: %s: %w", source, name, err)
			}
		}
	}
	p := &Pretrained{Tokenizer: tok, BOS: -1, PAD: -1, Templates: map[string]*ChatTemplate{}}
	if p, err = finishConfig(p, cfg, gen, source+": tokenizer_config.json"); err != nil {
		return nil, err
	}
	if b, ok := files["chat_template.jinja"]; ok {
		if _, has := p.Templates["default"]; !has {
			ct, err := compileChatTemplate(string(b), source+": chat_template.jinja", RenderLimits{})
			if err != nil {
				return nil, err
			}
			p.Templates["default"] = ct
		}
	}
	p.files = maps.Clone(files)
	return p, nil
}
