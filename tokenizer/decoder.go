package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// decoder is one step of Rust's Decoder::decode_chain: tokens in, tokens out.
type decoder interface {
	decodeChain(tokens []string) []string
}

type byteLevelDec struct{}

func (byteLevelDec) decodeChain(tokens []string) []string {
	var buf []byte
	for _, t := range tokens {
		buf = byteLevelDecode(t, buf)
	}
	return []string{lossyBytes(buf)}
}

// byteFallbackDec turns runs of <0xXX> tokens into text; bytes that do not
// form valid UTF-8 become one U+FFFD each, as in Rust.
type byteFallbackDec struct{}

func (byteFallbackDec) decodeChain(tokens []string) []string {
	out := make([]string, 0, len(tokens))
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if s := string(pending); isValidUTF8(s) {
			out = append(out, s)
		} else {
			out = append(out, strings.Repeat("\uFFFD", len(pending)))
		}
		pending = pending[:0]
	}
	for _, t := range tokens {
		if len(t) == 6 && strings.HasPrefix(t, "<0x") && t[5] == '>' {
			if b, err := strconv.ParseUint(t[3:5], 16, 8); err == nil {
				pending = append(pending, byte(b))
				continue
			}
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

type fuseDec struct{}

func (fuseDec) decodeChain(tokens []string) []string { return []string{strings.Join(tokens, "")} }

type stripDec struct {
	content     string
	start, stop int
}

func (d stripDec) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		for k := 0; k < d.start && strings.HasPrefix(t, d.content); k++ {
			t = t[len(d.content):]
		}
		for k := 0; k < d.stop && strings.HasSuffix(t, d.content); k++ {
			t = t[:len(t)-len(d.content)]
		}
		out[i] = t
	}
	return out
}

type replaceDec struct{ pat pattern }

func (d replaceDec) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		out[i] = d.pat.replaceAll(t)
	}
	return out
}

type metaspaceDec struct {
	repl         string
	prependFirst bool // prepend_scheme != never: drop the first token's leading space
}

func (d metaspaceDec) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		t = strings.ReplaceAll(t, d.repl, " ")
		if i == 0 && d.prependFirst {
			t = strings.TrimPrefix(t, " ")
		}
		out[i] = t
	}
	return out
}

// wordPieceDec joins "##" continuations (for BERT-style tokenizers).
type wordPieceDec struct{ prefix string }

func (d wordPieceDec) decodeChain(tokens []string) []string {
	out := make([]string, len(tokens))
	for i, t := range tokens {
		if i > 0 {
			if strings.HasPrefix(t, d.prefix) {
				t = t[len(d.prefix):]
			} else {
				t = " " + t
			}
		}
		out[i] = t
	}
	return out
}

type sequenceDec []decoder

func (q sequenceDec) decodeChain(tokens []string) []string {
	for _, d := range q {
		tokens = d.decodeChain(tokens)
	}
	return tokens
}

type decoderJSON struct {
	Type          string            `json:"type"`
	Decoders      []json.RawMessage `json:"decoders"`
	Pattern       json.RawMessage   `json:"pattern"`
	Content       string            `json:"content"`
	Start         int               `json:"start"`
	Stop          int               `json:"stop"`
	Replacement   string            `json:"replacement"`
	PrependScheme string            `json:"prepend_scheme"`
	AddPrefix     *bool             `json:"add_prefix_space"`
	Prefix        *string           `json:"prefix"`
}

func parseDecoder(raw json.RawMessage) (decoder, error) {
	if isNull(raw) {
		return nil, nil
	}
	var dj decoderJSON
	if err := json.Unmarshal(raw, &dj); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	switch dj.Type {
	case "ByteLevel":
		return byteLevelDec{}, nil
	case "ByteFallback":
		return byteFallbackDec{}, nil
	case "Fuse":
		return fuseDec{}, nil
	case "Strip":
		return stripDec{dj.Content, dj.Start, dj.Stop}, nil
	case "Replace":
		p, err := parsePattern(dj.Pattern, "decoder Replace")
		if err != nil {
			return nil, err
		}
		p.content = dj.Content
		return replaceDec{p}, nil
	case "Metaspace":
		d := metaspaceDec{repl: dj.Replacement, prependFirst: true}
		if d.repl == "" {
			d.repl = "▁"
		}
		if dj.PrependScheme == "never" || dj.PrependScheme == "" && dj.AddPrefix != nil && !*dj.AddPrefix {
			d.prependFirst = false
		}
		return d, nil
	case "WordPiece":
		d := wordPieceDec{prefix: "##"}
		if dj.Prefix != nil {
			d.prefix = *dj.Prefix
		}
		return d, nil
	case "Sequence":
		var seq sequenceDec
		for i, r := range dj.Decoders {
			d, err := parseDecoder(r)
			if err != nil {
				return nil, fmt.Errorf("decoder Sequence[%d]: %w", i, err)
			}
			if d != nil {
				seq = append(seq, d)
			}
		}
		return seq, nil
	case "":
		return nil, fmt.Errorf("decoder: missing type")
	}
	return nil, fmt.Errorf("decoder: %w %q", ErrUnsupported, dj.Type)
}
