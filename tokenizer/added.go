package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// AddedToken is one entry of tokenizer.json's "added_tokens".
type AddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

// trie finds added tokens leftmost-longest, like the aho-corasick automaton
// (MatchKind::LeftmostLongest) the Rust library builds.
type trie struct {
	nodes []trieNode
	first [256]bool // bytes that can start a token
}

type trieNode struct {
	next  map[byte]int32
	token int32 // index into addedVocab.tokens, -1 if none
}

func newTrie() *trie { return &trie{nodes: []trieNode{{token: -1}}} }

func (t *trie) insert(s string, tok int) {
	if s == "" {
		return
	}
	t.first[s[0]] = true
	n := 0
	for i := 0; i < len(s); i++ {
		nx, ok := t.nodes[n].next[s[i]]
		if !ok {
			if t.nodes[n].next == nil {
				t.nodes[n].next = map[byte]int32{}
			}
			nx = int32(len(t.nodes))
			t.nodes[n].next[s[i]] = nx
			t.nodes = append(t.nodes, trieNode{token: -1})
		}
		n = int(nx)
	}
	if t.nodes[n].token < 0 {
		t.nodes[n].token = int32(tok)
	}
}

// longestAt returns the token index and length of the longest token that
// starts at s[i], or -1.
func (t *trie) longestAt(s string, i int) (int, int) {
	best, bestLen := -1, 0
	n := 0
	for j := i; j < len(s); j++ {
		nx, ok := t.nodes[n].next[s[j]]
		if !ok {
			break
		}
		n = int(nx)
		if tok := t.nodes[n].token; tok >= 0 {
			best, bestLen = int(tok), j+1-i
		}
	}
	return best, bestLen
}

// piece is a part of the input: either an added token (id >= 0) or text.
type piece struct {
	text string
	id   int // -1 for text
}

// findMatches splits s around the added tokens in t, honoring single_word,
// lstrip and rstrip as Rust's AddedVocabulary::find_matches does.
func findMatches(s string, t *trie, tokens []AddedToken, dst []piece) []piece {
	if t == nil || len(t.nodes) == 1 {
		return append(dst, piece{s, -1})
	}
	startOffset := 0
	for i := 0; i < len(s); {
		if !t.first[s[i]] {
			i++
			continue
		}
		k, n := t.longestAt(s, i)
		if k < 0 {
			i++
			continue
		}
		tok := &tokens[k]
		start, stop := i, i+n
		if tok.SingleWord {
			startOK := start == 0 || !endsWithWord(s[:start])
			stopOK := stop == len(s) || !startsWithWord(s[stop:])
			if !startOK || !stopOK {
				i = stop // the automaton resumes after the discarded match
				continue
			}
		}
		if tok.LStrip {
			start = max(len(strings.TrimRightFunc(s[:start], unicode.IsSpace)), startOffset)
		}
		if tok.RStrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
		}
		if startOffset < start {
			dst = append(dst, piece{s[startOffset:start], -1})
		}
		dst = append(dst, piece{s[start:stop], tok.ID})
		startOffset = stop
		i = stop
	}
	if startOffset < len(s) || len(s) == 0 {
		dst = append(dst, piece{s[startOffset:], -1})
	}
	return dst
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return unicode.IsLetter(r) || unicode.IsNumber(r)
}
