package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
)

// model turns one pre-tokenized word into ids.
type model interface {
	tokenize(word string, dst []int) []int
	tokenToID(tok string) (int, bool)
	idToToken(id int) (string, bool)
	vocabSize() int
}

// bpe is the BPE model of tokenizer.json.
type bpe struct {
	vocab        map[string]int
	vocabR       []string
	merges       map[uint64]mergeInfo // (left id, right id) -> rank, result
	unkID        int                  // -1 if none
	fuseUnk      bool
	byteFallback bool
	byteIDs      [256]int // ids of <0x00>..<0xFF>, -1 if absent
	ignoreMerges bool
	prefix       string // continuing_subword_prefix
	suffix       string // end_of_word_suffix

	cache     sync.Map // string -> []int, for words shorter than cacheMaxWordLen
	cacheSize atomic.Int64
}

type mergeInfo struct{ rank, id int32 }

const (
	cacheMaxWords   = 100_000
	cacheMaxWordLen = 256
)

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

type bpeJSON struct {
	Type         string          `json:"type"`
	Vocab        map[string]int  `json:"vocab"`
	Merges       json.RawMessage `json:"merges"`
	UnkToken     *string         `json:"unk_token"`
	FuseUnk      bool            `json:"fuse_unk"`
	ByteFallback bool            `json:"byte_fallback"`
	IgnoreMerges bool            `json:"ignore_merges"`
	Prefix       *string         `json:"continuing_subword_prefix"`
	Suffix       *string         `json:"end_of_word_suffix"`
	Dropout      *float64        `json:"dropout"`
}

func newBPE(mj *bpeJSON) (*bpe, error) {
	if mj.Dropout != nil && *mj.Dropout > 0 {
		return nil, fmt.Errorf("model BPE: dropout %v: %w", *mj.Dropout, ErrUnsupported)
	}
	m := &bpe{vocab: mj.Vocab, unkID: -1, fuseUnk: mj.FuseUnk, byteFallback: mj.ByteFallback, ignoreMerges: mj.IgnoreMerges}
	if mj.Prefix != nil {
		m.prefix = *mj.Prefix
	}
	if mj.Suffix != nil {
		m.suffix = *mj.Suffix
	}
	maxID := -1
	for tok, id := range m.vocab {
		if id < 0 {
			return nil, fmt.Errorf("model BPE: token %q has negative id %d", tok, id)
		}
		maxID = max(maxID, id)
	}
	m.vocabR = make([]string, maxID+1)
	for tok, id := range m.vocab {
		m.vocabR[id] = tok
	}
	if mj.UnkToken != nil {
		id, ok := m.vocab[*mj.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model BPE: unk_token %q is not in the vocab", *mj.UnkToken)
		}
		m.unkID = id
	}
	for b := 0; b < 256; b++ {
		m.byteIDs[b] = -1
		if id, ok := m.vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.byteIDs[b] = id
		}
	}
	pairs, err := parseMerges(mj.Merges)
	if err != nil {
		return nil, err
	}
	m.merges = make(map[uint64]mergeInfo, len(pairs))
	prefixLen := len(m.prefix)
	for rank, p := range pairs {
		a, okA := m.vocab[p[0]]
		b, okB := m.vocab[p[1]]
		if !okA || !okB {
			return nil, fmt.Errorf("model BPE: merge %d (%q %q): token not in vocab", rank, p[0], p[1])
		}
		right := p[1]
		if prefixLen > 0 && strings.HasPrefix(right, m.prefix) {
			right = right[prefixLen:]
		}
		id, ok := m.vocab[p[0]+right]
		if !ok {
			return nil, fmt.Errorf("model BPE: merge %d (%q %q): result %q not in vocab", rank, p[0], p[1], p[0]+right)
		}
		k := pairKey(int32(a), int32(b))
		if _, dup := m.merges[k]; !dup { // the first (lowest rank) wins, as in Rust
			m.merges[k] = mergeInfo{int32(rank), int32(id)}
		}
	}
	return m, nil
}

// parseMerges accepts both the old ["a b", ...] and new [["a","b"], ...] forms.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var strs []string
	if err := json.Unmarshal(raw, &strs); err == nil {
		out := make([][2]string, len(strs))
		for i, s := range strs {
			a, b, ok := strings.Cut(s, " ")
			if !ok {
				return nil, fmt.Errorf("model BPE: merge %d %q: want two tokens separated by a space", i, s)
			}
			out[i] = [2]string{a, b}
		}
		return out, nil
	}
	var pairs [][]string
	if err := json.Unmarshal(raw, &pairs); err != nil {
		return nil, fmt.Errorf("model BPE: merges: %w", err)
	}
	out := make([][2]string, len(pairs))
	for i, p := range pairs {
		if len(p) != 2 {
			return nil, fmt.Errorf("model BPE: merge %d: want 2 tokens, got %d", i, len(p))
		}
		out[i] = [2]string{p[0], p[1]}
	}
	return out, nil
}

func (m *bpe) tokenToID(tok string) (int, bool) { id, ok := m.vocab[tok]; return id, ok }
func (m *bpe) vocabSize() int                   { return len(m.vocabR) }
func (m *bpe) idToToken(id int) (string, bool) {
	if id < 0 || id >= len(m.vocabR) {
		return "", false
	}
	if tok := m.vocabR[id]; tok != "" {
		return tok, true
	}
	_, ok := m.vocab[""]
	return "", ok && m.vocab[""] == id
}

func (m *bpe) tokenize(word string, dst []int) []int {
	if word == "" {
		return dst
	}
	cacheable := len(word) < cacheMaxWordLen
	if cacheable {
		if v, ok := m.cache.Load(word); ok {
			return append(dst, v.([]int)...)
		}
	}
	if m.ignoreMerges {
		if id, ok := m.vocab[word]; ok {
			return append(dst, id)
		}
	}
	start := len(dst)
	dst = m.mergeWord(word, dst)
	if cacheable && m.cacheSize.Load() < cacheMaxWords {
		m.cacheSize.Add(1)
		m.cache.Store(word, append([]int(nil), dst[start:]...))
	}
	return dst
}

// symbol is one node of the doubly linked list a word is merged in.
type symbol struct {
	id         int32
	prev, next int32
	gone       bool
}

// mergeWord splits word into symbols and applies merges lowest rank first,
// leftmost first among equal ranks (Rust's Word::merge_all), with a heap so
// that long unsplit words (Gemma) stay O(n log n).
func (m *bpe) mergeWord(word string, dst []int) []int {
	syms := make([]symbol, 0, len(word))
	pendingUnk := false
	push := func(id int) {
		syms = append(syms, symbol{id: int32(id), prev: int32(len(syms) - 1), next: int32(len(syms) + 1)})
	}
	for i, r := range word {
		end := i + runeLen(r)
		s := word[i:end]
		if m.prefix != "" && i > 0 {
			s = m.prefix + s
		}
		if m.suffix != "" && end == len(word) {
			s += m.suffix
		}
		if id, ok := m.vocab[s]; ok {
			push(id)
			pendingUnk = false
			continue
		}
		if m.byteFallback {
			ok := true
			for k := i; k < end; k++ {
				if m.byteIDs[word[k]] < 0 {
					ok = false
					break
				}
			}
			if ok {
				for k := i; k < end; k++ {
					push(m.byteIDs[word[k]])
				}
				pendingUnk = false
				continue
			}
		}
		if m.unkID >= 0 {
			if m.fuseUnk && pendingUnk {
				continue
			}
			push(m.unkID)
			pendingUnk = true
		}
	}
	if len(syms) == 0 {
		return dst
	}
	syms[len(syms)-1].next = -1
	if len(syms) > 1 && len(m.merges) > 0 {
		m.mergeAll(syms)
	}
	for i := int32(0); i >= 0; i = syms[i].next {
		dst = append(dst, int(syms[i].id))
	}
	return dst
}

type mergeCand struct{ rank, pos, id int32 }

func (a mergeCand) less(b mergeCand) bool {
	return a.rank < b.rank || a.rank == b.rank && a.pos < b.pos
}

// mergeHeap is a binary min-heap of merge candidates (no container/heap
// interface boxing on this hot path).
type mergeHeap []mergeCand

func (h *mergeHeap) push(c mergeCand) {
	*h = append(*h, c)
	q := *h
	for i := len(q) - 1; i > 0; {
		p := (i - 1) / 2
		if !q[i].less(q[p]) {
			break
		}
		q[i], q[p] = q[p], q[i]
		i = p
	}
}

func (h *mergeHeap) pop() mergeCand {
	q := *h
	top := q[0]
	n := len(q) - 1
	q[0] = q[n]
	q = q[:n]
	for i := 0; ; {
		l, r, s := 2*i+1, 2*i+2, i
		if l < n && q[l].less(q[s]) {
			s = l
		}
		if r < n && q[r].less(q[s]) {
			s = r
		}
		if s == i {
			break
		}
		q[i], q[s] = q[s], q[i]
		i = s
	}
	*h = q
	return top
}

func (m *bpe) mergeAll(syms []symbol) {
	h := make(mergeHeap, 0, len(syms))
	for i := 0; i+1 < len(syms); i++ {
		if mi, ok := m.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h = append(h, mergeCand{mi.rank, int32(i), mi.id})
		}
	}
	// Heapify.
	for i := len(h)/2 - 1; i >= 0; i-- {
		for j := i; ; {
			l, r, s := 2*j+1, 2*j+2, j
			if l < len(h) && h[l].less(h[s]) {
				s = l
			}
			if r < len(h) && h[r].less(h[s]) {
				s = r
			}
			if s == j {
				break
			}
			h[j], h[s] = h[s], h[j]
			j = s
		}
	}
	for len(h) > 0 {
		top := h.pop()
		cur := &syms[top.pos]
		if cur.gone || cur.next < 0 {
			continue
		}
		nextPos := cur.next
		right := syms[nextPos]
		mi, ok := m.merges[pairKey(cur.id, right.id)]
		if !ok || mi.id != top.id {
			continue // stale entry
		}
		cur.id = top.id
		cur.next = right.next
		syms[nextPos].gone = true
		if right.next >= 0 {
			syms[right.next].prev = top.pos
		}
		if cur.prev >= 0 {
			if mi, ok := m.merges[pairKey(syms[cur.prev].id, cur.id)]; ok {
				h.push(mergeCand{mi.rank, cur.prev, mi.id})
			}
		}
		if cur.next >= 0 {
			if mi, ok := m.merges[pairKey(cur.id, syms[cur.next].id)]; ok {
				h.push(mergeCand{mi.rank, top.pos, mi.id})
			}
		}
	}
}
