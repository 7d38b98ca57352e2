package grpo

import (
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/grpokit/grpokit/reward"
)

// The printed table of completions (Config.LogCompletions): column widths
// in characters, and the lines a cell keeps of a long text.
const (
	samplePromptWidth     = 32
	sampleCompletionWidth = 48
	// A prompt keeps its first three lines (a task's opening sentence and
	// its data) and its last four (the question comes after any system
	// prompt); a completion its first four and its last (the final
	// answer); "…" marks the lines left out. Lines are wrapped lines.
	samplePromptHead, samplePromptTail         = 3, 4
	sampleCompletionHead, sampleCompletionTail = 4, 1
)

// printSamples writes the table of completions TRL prints at a logging step
// (trl.trainer.utils.print_prompt_completions_sample): one row per
// completion of rows with its prompt, completion, each reward ("n/a" where
// it did not apply) and advantage, to 2 decimals. With unique, only the
// first row of each prompt; with n not nil, n rows drawn at random (seeded
// by seed and step) when there are more, shown in batch order; n = 0
// prints nothing. Long texts are wrapped to their column and cut in the
// middle (see samplePromptHead).
func printSamples(w io.Writer, step int, rows []*row, names []string, n *int, unique bool, seed int64) {
	pick := make([]int, 0, len(rows))
	seen := map[string]bool{}
	for i, r := range rows {
		if unique {
			if seen[r.Prompt] {
				continue
			}
			seen[r.Prompt] = true
		}
		pick = append(pick, i)
	}
	total := len(pick)
	if n != nil && *n < len(pick) {
		if *n <= 0 {
			return
		}
		rng := rand.New(rand.NewPCG(uint64(seed), uint64(step)^0x5a3b1e5))
		rng.Shuffle(len(pick), func(i, j int) { pick[i], pick[j] = pick[j], pick[i] })
		pick = pick[:*n]
		slices.Sort(pick)
	}
	if len(pick) == 0 {
		return
	}
	head := append(append([]string{"prompt", "completion"}, names...), "advantage")
	table := make([][][]string, len(pick)) // rows × columns × lines
	for j, i := range pick {
		r := rows[i]
		cols := [][]string{
			cellLines(r.Prompt, samplePromptWidth, samplePromptHead, samplePromptTail),
			cellLines(r.Completion, sampleCompletionWidth, sampleCompletionHead, sampleCompletionTail),
		}
		for k := range names {
			v := "n/a"
			if k < len(r.Rewards) && !reward.IsNotApplicable(r.Rewards[k]) {
				v = fmt.Sprintf("%.2f", r.Rewards[k])
			}
			cols = append(cols, []string{v})
		}
		table[j] = append(cols, []string{fmt.Sprintf("%.2f", r.Advantage)})
	}
	widths := make([]int, len(head))
	for k, h := range head {
		widths[k] = utf8.RuneCountInString(h)
		for _, cols := range table {
			for _, l := range cols[k] {
				widths[k] = max(widths[k], utf8.RuneCountInString(l))
			}
		}
	}
	widths[0], widths[1] = samplePromptWidth, sampleCompletionWidth

	var b strings.Builder
	what := "all"
	if unique {
		what = "one per prompt"
	}
	if len(pick) < total {
		what = fmt.Sprintf("%d drawn at random of %d", len(pick), total)
		if unique {
			what += " prompts"
		}
	}
	fmt.Fprintf(&b, "completions of step %d (%s; %d in the generation batch)\n", step, what, len(rows))
	rule := func(c byte) {
		for _, wd := range widths {
			b.WriteByte('+')
			b.WriteString(strings.Repeat(string(c), wd+2))
		}
		b.WriteString("+\n")
	}
	line := func(cells []string, right []bool) {
		for i, c := range cells {
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(c))
			if right[i] {
				c = pad + c
			} else {
				c += pad
			}
			b.WriteString("| ")
			b.WriteString(c)
			b.WriteByte(' ')
		}
		b.WriteString("|\n")
	}
	right := make([]bool, len(widths))
	for i := 2; i < len(right); i++ {
		right[i] = true
	}
	rule('-')
	line(head, make([]bool, len(widths)))
	rule('=')
	for _, cols := range table {
		height := 0
		for _, c := range cols {
			height = max(height, len(c))
		}
		for l := range height {
			cells := make([]string, len(cols))
			for k, c := range cols {
				if l < len(c) {
					cells[k] = c[l]
				}
			}
			line(cells, right)
		}
		rule('-')
	}
	io.WriteString(w, b.String())
}

// cellLines wraps text to width characters a line (at spaces where it
// can), and keeps its first head and last tail lines with a "…" line
// between when it has more. Trailing blank lines are dropped.
func cellLines(text string, width, head, tail int) []string {
	var lines []string
	text = strings.TrimRight(strings.ReplaceAll(text, "\r\n", "\n"), " \t\n")
	for _, para := range strings.Split(text, "\n") {
		lines = append(lines, wrapLine(strings.ReplaceAll(para, "\t", " "), width)...)
	}
	if len(lines) > head+tail+1 {
		lines = slices.Concat(lines[:head], []string{"…"}, lines[len(lines)-tail:])
	}
	return lines
}

// wrapLine breaks s into lines of at most width characters, at the last
// space of each when there is one, and turns control characters into
// spaces so that the table keeps its shape.
func wrapLine(s string, width int) []string {
	r := []rune(strings.TrimRight(s, " "))
	for i, c := range r {
		if c < ' ' || c == 0x7f {
			r[i] = ' '
		}
	}
	if len(r) == 0 {
		return []string{""}
	}
	var out []string
	for len(r) > width {
		cut := width
		if sp := lastSpace(r[:width+1]); sp > width/2 {
			cut = sp
		}
		out = append(out, strings.TrimRight(string(r[:cut]), " "))
		r = r[cut:]
		for len(r) > 0 && r[0] == ' ' {
			r = r[1:]
		}
	}
	if len(r) > 0 {
		out = append(out, string(r))
	}
	return out
}

// lastSpace returns the index of the last space of r, or -1.
func lastSpace(r []rune) int {
	for i := len(r) - 1; i >= 0; i-- {
		if r[i] == ' ' {
			return i
		}
	}
	return -1
}
