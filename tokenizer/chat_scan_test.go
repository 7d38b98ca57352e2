package tokenizer

import (
	"slices"
	"testing"
)

// TestTopLevelScanners: the bracket- and string-aware scanners the chat
// template rewrite uses, on hand-worked cases.
func TestTopLevelScanners(t *testing.T) {
	splits := []struct {
		in   string
		want []string
	}{
		{`a, b`, []string{"a", " b"}},
		{`f(a, b), [c, d], {"k": e}`, []string{"f(a, b)", " [c, d]", ` {"k": e}`}},
		{`"x, y", 'z\', w'`, []string{`"x, y"`, ` 'z\', w'`}},
		{`(a, b`, []string{"(a, b"}},
		{``, []string{""}},
	}
	for _, c := range splits {
		if got := splitTop(c.in, ','); !slices.Equal(got, c.want) {
			t.Errorf("splitTop(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	brackets := []struct {
		in       string
		at, want int
	}{
		{`(a)`, 0, 2},
		{`x[(a), "]"]`, 1, 10},
		{`{'}': (1)}`, 0, 9},
		{`f(a, (b)`, 1, -1},
		{`((a) b)`, 1, 3},
	}
	for _, c := range brackets {
		if got := matchBracket(c.in, c.at); got != c.want {
			t.Errorf("matchBracket(%q, %d) = %d, want %d", c.in, c.at, got, c.want)
		}
	}
	keywords := []struct {
		in, kw string
		want   int
	}{
		{`a if b else c`, "if", 2},
		{`a if b else c`, "else", 7},
		{`f(x if y) if z`, "if", 10},
		{`'if' if z`, "if", 5},
		{`elif x`, "if", -1},
		{`x.if_y`, "if", -1},
		{`gift if`, "if", 5},
	}
	for _, c := range keywords {
		if got := findKeyword(c.in, c.kw); got != c.want {
			t.Errorf("findKeyword(%q, %q) = %d, want %d", c.in, c.kw, got, c.want)
		}
	}
}
