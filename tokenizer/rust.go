//go:build tokenizers_rust

package tokenizer

import (
	"fmt"
	"runtime"

	rust "github.com/daulet/tokenizers"
)

// RustTokenizer runs the Hugging Face Rust library through cgo
// (github.com/daulet/tokenizers). It needs libtokenizers.a at link time and
// the build tag tokenizers_rust. Safe for concurrent use.
type RustTokenizer struct {
	tk     *rust.Tokenizer
	lookup *Tokenizer // token <-> id lookups, which the binding lacks
}

var _ Codec = (*RustTokenizer)(nil)

// NewRust loads the contents of a tokenizer.json into the Rust library.
func NewRust(data []byte) (*RustTokenizer, error) {
	lookup, err := FromJSON(data)
	if err != nil {
		return nil, err
	}
	tk, err := rust.FromBytes(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: rust backend: %w", err)
	}
	r := &RustTokenizer{tk: tk, lookup: lookup}
	runtime.AddCleanup(r, func(tk *rust.Tokenizer) { tk.Close() }, tk)
	return r, nil
}

// Encode returns the ids of text (see Codec).
func (r *RustTokenizer) Encode(text string, addSpecialTokens bool) []int {
	ids, _ := r.tk.Encode(lossyUTF8(text), addSpecialTokens)
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out
}

// Decode returns the text of ids (see Codec).
func (r *RustTokenizer) Decode(ids []int, skipSpecialTokens bool) string {
	u := make([]uint32, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && id <= int(^uint32(0)) {
			u = append(u, uint32(id))
		}
	}
	return r.tk.Decode(u, skipSpecialTokens)
}

// TokenToID looks a token up (added tokens included).
func (r *RustTokenizer) TokenToID(token string) (int, bool) { return r.lookup.TokenToID(token) }

// VocabSize is the Rust library's vocabulary size with added tokens.
func (r *RustTokenizer) VocabSize() int { return int(r.tk.VocabSize()) }
