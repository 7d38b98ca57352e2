package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
)

// postProcessor adds the special tokens of a template around the ids of a
// single sequence (pairs are not supported: grpokit encodes single texts).
type postProcessor struct {
	prefix, suffix []int
}

func (p *postProcessor) apply(ids []int) []int {
	if len(p.prefix) == 0 && len(p.suffix) == 0 {
		return ids
	}
	out := make([]int, 0, len(p.prefix)+len(ids)+len(p.suffix))
	out = append(out, p.prefix...)
	out = append(out, ids...)
	return append(out, p.suffix...)
}

type postJSON struct {
	Type       string            `json:"type"`
	Processors []json.RawMessage `json:"processors"`
	Single     []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct {
			ID string `json:"id"`
		} `json:"Sequence"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []int `json:"ids"`
	} `json:"special_tokens"`
	Sep []any `json:"sep"`
	Cls []any `json:"cls"`
}

func parsePostProcessor(raw json.RawMessage, t *Tokenizer) (*postProcessor, error) {
	if isNull(raw) {
		return nil, nil
	}
	var pj postJSON
	if err := json.Unmarshal(raw, &pj); err != nil {
		return nil, fmt.Errorf("post_processor: %w", err)
	}
	switch pj.Type {
	case "ByteLevel":
		return nil, nil // only changes offsets
	case "Sequence":
		var out *postProcessor
		for i, r := range pj.Processors {
			p, err := parsePostProcessor(r, t)
			if err != nil {
				return nil, fmt.Errorf("post_processor Sequence[%d]: %w", i, err)
			}
			if p != nil {
				if out == nil {
					out = &postProcessor{}
				}
				out.prefix = append(p.prefix, out.prefix...)
				out.suffix = append(out.suffix, p.suffix...)
			}
		}
		return out, nil
	case "TemplateProcessing":
		p := &postProcessor{}
		seen := false
		for i, item := range pj.Single {
			switch {
			case item.Sequence != nil:
				if seen {
					return nil, fmt.Errorf("post_processor TemplateProcessing: single[%d]: second sequence", i)
				}
				seen = true
			case item.SpecialToken != nil:
				st, ok := pj.SpecialTokens[item.SpecialToken.ID]
				if !ok {
					return nil, fmt.Errorf("post_processor TemplateProcessing: special token %q: %w", item.SpecialToken.ID, ErrUnknownToken)
				}
				if seen {
					p.suffix = append(p.suffix, st.IDs...)
				} else {
					p.prefix = append(p.prefix, st.IDs...)
				}
			default:
				return nil, fmt.Errorf("post_processor TemplateProcessing: single[%d]: want SpecialToken or Sequence", i)
			}
		}
		if !seen {
			return nil, errors.New("post_processor TemplateProcessing: single has no Sequence")
		}
		return p, nil
	case "BertProcessing", "RobertaProcessing":
		cls, err := tokenPair(pj.Cls)
		if err != nil {
			return nil, fmt.Errorf("post_processor %s: cls: %w", pj.Type, err)
		}
		sep, err := tokenPair(pj.Sep)
		if err != nil {
			return nil, fmt.Errorf("post_processor %s: sep: %w", pj.Type, err)
		}
		return &postProcessor{prefix: []int{cls}, suffix: []int{sep}}, nil
	case "":
		return nil, errors.New("post_processor: missing type")
	}
	return nil, fmt.Errorf("post_processor: %w %q", ErrUnsupported, pj.Type)
}

// tokenPair reads Bert's ["[CLS]", 101].
func tokenPair(v []any) (int, error) {
	if len(v) != 2 {
		return 0, errors.New("want [token, id]")
	}
	f, ok := v[1].(float64)
	if !ok {
		return 0, errors.New("want [token, id]")
	}
	return int(f), nil
}
