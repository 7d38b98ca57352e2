package model

// Constraint restricts generation to allowed continuations (constrained
// decoding). Allowed gets the tokens generated so far for one completion
// (not the prompt) and returns the ids allowed next; nil means any token,
// an empty non-nil slice is an error.
type Constraint interface {
	Allowed(prefix []int) []int
}

// ConstraintFunc adapts a function to Constraint.
type ConstraintFunc func(prefix []int) []int

// Allowed calls f(prefix).
func (f ConstraintFunc) Allowed(prefix []int) []int { return f(prefix) }

// Trie is a Constraint that admits exactly the given token sequences, each
// followed by an end id (usually EOS).
type Trie struct {
	root *trieNode
	end  int
}

type trieNode struct {
	next     map[int]*trieNode
	order    []int // children in insertion order, for deterministic output
	terminal bool
}

// NewTrie builds a Trie of seqs, each to be followed by end.
func NewTrie(seqs [][]int, end int) *Trie {
	t := &Trie{root: &trieNode{next: map[int]*trieNode{}}, end: end}
	for _, s := range seqs {
		n := t.root
		for _, id := range s {
			c, ok := n.next[id]
			if !ok {
				c = &trieNode{next: map[int]*trieNode{}}
				n.next[id] = c
				n.order = append(n.order, id)
			}
			n = c
		}
		n.terminal = true
	}
	return t
}

// Allowed returns the ids that keep prefix inside the trie, plus end when
// prefix is a complete sequence. A prefix that has left the trie (or ended)
// allows only end.
func (t *Trie) Allowed(prefix []int) []int {
	n := t.root
	for _, id := range prefix {
		c, ok := n.next[id]
		if !ok {
			return []int{t.end}
		}
		n = c
	}
	out := append([]int(nil), n.order...)
	if n.terminal {
		out = append(out, t.end)
	}
	if len(out) == 0 {
		return []int{t.end}
	}
	return out
}
