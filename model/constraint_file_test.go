package model_test

import (
	"errors"
	"reflect"
	"testing"

	"github.com/grpokit/grpokit/model"
)

func TestSaveLoadConstraint(t *testing.T) {
	dir := t.TempDir()
	if c, err := model.LoadConstraint(dir); c != nil || err != nil {
		t.Fatalf("no file: %v, %v", c, err)
	}
	seqs := [][]int{{5, 6}, {5}, {7, 8, 9}}
	if err := model.SaveConstraint(dir, model.NewTrie(seqs, 2)); err != nil {
		t.Fatal(err)
	}
	c, err := model.LoadConstraint(dir)
	if err != nil {
		t.Fatal(err)
	}
	tr := c.(*model.Trie)
	if got := tr.Sequences(); !reflect.DeepEqual(got, [][]int{{5}, {5, 6}, {7, 8, 9}}) || tr.End() != 2 {
		t.Errorf("sequences %v end %d", got, tr.End())
	}
	for _, prefix := range [][]int{nil, {5}, {7, 8}, {7, 8, 9}} {
		if a, b := tr.Allowed(prefix), model.NewTrie(seqs, 2).Allowed(prefix); !reflect.DeepEqual(a, b) {
			t.Errorf("Allowed(%v) = %v after reload, %v before", prefix, a, b)
		}
	}
	if err := model.SaveConstraint(dir, model.ConstraintFunc(func([]int) []int { return nil })); err != nil {
		t.Fatal(err)
	}
	if _, err := model.LoadConstraint(dir); !errors.Is(err, model.ErrConstraintNotSaved) {
		t.Errorf("custom constraint: err = %v", err)
	}
}
