package model

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/grpokit/grpokit/internal/jsonfile"
)

// ConstraintFile is the file in a saved model folder that records the
// constraint the model was trained and should be run under.
const ConstraintFile = "constraint.json"

// ErrConstraintNotSaved is returned (wrapped) by LoadConstraint when the
// folder's model was trained under a constraint that could not be written
// down (a ConstraintFunc or another custom type): running it without that
// constraint will not behave as trained.
var ErrConstraintNotSaved = errors.New("model: the model was trained under a constraint that was not saved")

// constraintJSON is constraint.json.
type constraintJSON struct {
	// Type is "trie" (Sequences and End hold it) or "custom" (not saved;
	// Description names its Go type).
	Type        string  `json:"type"`
	End         int     `json:"end,omitempty"`
	Sequences   [][]int `json:"sequences,omitempty"`
	Description string  `json:"description,omitempty"`
}

// Sequences returns the token sequences the Trie admits, in insertion
// order (each is followed by End()).
func (t *Trie) Sequences() [][]int {
	var out [][]int
	var walk func(n *trieNode, prefix []int)
	walk = func(n *trieNode, prefix []int) {
		if n.terminal {
			out = append(out, append([]int(nil), prefix...))
		}
		for _, id := range n.order {
			walk(n.next[id], append(prefix, id))
		}
	}
	walk(t.root, nil)
	return out
}

// End returns the id that must follow every sequence.
func (t *Trie) End() int { return t.end }

// SaveConstraint writes c to dir/constraint.json so that LoadConstraint
// (and grpokit generate) can apply it again: a *Trie in full; any other
// constraint as a note that one was used (LoadConstraint then returns
// ErrConstraintNotSaved). A nil c writes nothing.
func SaveConstraint(dir string, c Constraint) error {
	if c == nil {
		return nil
	}
	var cj constraintJSON
	if t, ok := c.(*Trie); ok {
		cj = constraintJSON{Type: "trie", End: t.end, Sequences: t.Sequences()}
	} else {
		cj = constraintJSON{Type: "custom", Description: fmt.Sprintf("%T (not saved; apply it again in code)", c)}
	}
	b, err := json.Marshal(cj)
	if err != nil {
		return fmt.Errorf("model: save constraint: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("model: save constraint: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConstraintFile), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("model: save constraint: %w", err)
	}
	return nil
}

// LoadConstraint reads dir/constraint.json: nil and no error when there is
// none (the model was trained unconstrained), the Trie it holds, or an
// error wrapping ErrConstraintNotSaved for a custom constraint.
func LoadConstraint(dir string) (Constraint, error) {
	path := filepath.Join(dir, ConstraintFile)
	var cj constraintJSON
	found, err := jsonfile.ReadOptional(path, &cj)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	if !found {
		return nil, nil
	}
	switch cj.Type {
	case "trie":
		if len(cj.Sequences) == 0 {
			return nil, fmt.Errorf("model: %s: a trie with no sequences", path)
		}
		return NewTrie(cj.Sequences, cj.End), nil
	case "custom":
		return nil, fmt.Errorf("%w: %s (%s)", ErrConstraintNotSaved, cj.Description, path)
	default:
		return nil, fmt.Errorf("model: %s: unknown constraint type %q", path, cj.Type)
	}
}
