package main

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/envs/gsm8k"
	"github.com/grpokit/grpokit/envs/poker"
	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/tokenizer"
)

// loadData returns the training and evaluation examples of c's dataset,
// and a line for the user saying where the eval rows come from ("" when
// there is nothing to say). The eval rows are held out: eval_path's, a
// built-in task's test split, or eval.n rows of path picked at random
// with the run's seed, which training then never sees. Without any of
// these (eval.n 0, no eval_path), grpokit eval's -n rows are training
// rows, and the line says so.
func loadData(c *runConfig) (train, eval dataset.SliceDataset, note string, err error) {
	d := c.Dataset
	size := cmp.Or(d.Size, 10000)
	evalN := cmp.Or(c.evalLimit, c.Eval.N)
	switch d.Builtin {
	case "":
		if train, err = dataset.LoadDataset(d.Path, d.JSONLFields); err != nil {
			return nil, nil, "", err
		}
		switch {
		case d.EvalPath != "":
			if eval, err = dataset.LoadDataset(d.EvalPath, d.JSONLFields); err != nil {
				return nil, nil, "", err
			}
			if filepath.Clean(d.EvalPath) == filepath.Clean(d.Path) {
				note = fmt.Sprintf("grpokit: eval: eval_path is the training file %s: the eval rows are trained on, not held out", d.Path)
			}
		case c.Eval.N > 0:
			if c.Eval.N >= len(train) {
				return nil, nil, "", fmt.Errorf("grpokit: eval.n %d would hold out all %d rows of %s, leaving none to train on: "+
					"lower eval.n, or give the eval rows as dataset.eval_path", c.Eval.N, len(train), d.Path)
			}
			n := len(train)
			train, eval = holdOut(train, c.Eval.N, uint64(c.Seed))
			note = fmt.Sprintf("grpokit: eval: %d of the %d rows of %s are held out (picked with seed %d): training uses the other %d "+
				"(dataset.eval_path gives a separate eval file instead)", len(eval), n, d.Path, c.Seed, len(train))
		case evalN > 0:
			eval = train
			note = fmt.Sprintf("grpokit: eval: the config holds no rows out (eval.n 0, no dataset.eval_path): "+
				"the %d eval rows are the first training rows of %s", min(evalN, len(train)), d.Path)
		}
	case "gsm8k":
		tr, err := gsm8k.Train()
		if err != nil {
			return nil, nil, "", err
		}
		te, err := gsm8k.Test()
		if err != nil {
			return nil, nil, "", err
		}
		for _, ex := range tr {
			train = append(train, dataset.Example{Prompt: ex.Question, Answer: ex.Answer})
		}
		for _, ex := range te {
			eval = append(eval, dataset.Example{Prompt: ex.Question, Answer: ex.Answer})
		}
	case "poker":
		// Training and evaluation hands come from different seeds.
		for i, s := range []*poker.Sampler{poker.NewSampler(uint64(c.Seed)), poker.NewSampler(uint64(c.Seed) + 1e6)} {
			n := size
			if i == 1 {
				n = max(evalN, 1)
			}
			for _, ex := range s.Batch(n) {
				e := dataset.Example{Prompt: ex.Prompt, Answer: ex.Answer}
				if i == 0 {
					train = append(train, e)
				} else {
					eval = append(eval, e)
				}
			}
		}
	case "wordle":
		answers := wordle.Answers()
		split := len(answers) * 9 / 10
		for i, s := range []*wordle.StateSampler{wordle.NewStateSampler(uint64(c.Seed), answers[:split]), wordle.NewStateSampler(uint64(c.Seed)+1, answers[split:])} {
			n := size
			if i == 1 {
				n = max(evalN, 1)
			}
			for range n {
				st := s.Next()
				e := dataset.Example{Prompt: st.Prompt(), Answer: st.Answer, Meta: st.Meta()}
				if i == 0 {
					train = append(train, e)
				} else {
					eval = append(eval, e)
				}
			}
		}
	default:
		return nil, nil, "", fmt.Errorf("grpokit: dataset.builtin %q: want gsm8k, poker or wordle", d.Builtin)
	}
	if d.SystemPrompt != "" {
		for _, ds := range []dataset.SliceDataset{train, eval} {
			for i, ex := range ds {
				if len(ex.Messages) == 0 {
					ds[i].Messages = []dataset.Message{{Role: "system", Content: d.SystemPrompt}, {Role: "user", Content: ex.Prompt}}
				}
			}
		}
	}
	if evalN > 0 && len(eval) > evalN {
		eval = eval[:evalN]
	}
	return train, eval, note, nil
}

// holdOut splits n rows, picked at random with seed, off rows: the rest
// (for training) and the n, each in the file's order.
func holdOut(rows dataset.SliceDataset, n int, seed uint64) (rest, held dataset.SliceDataset) {
	pick := make([]bool, len(rows))
	for _, i := range rand.New(rand.NewPCG(seed, 0x6576616c)).Perm(len(rows))[:n] {
		pick[i] = true
	}
	for i, ex := range rows {
		if pick[i] {
			held = append(held, ex)
		} else {
			rest = append(rest, ex)
		}
	}
	return rest, held
}

var wordRE = regexp.MustCompile(`\p{L}+|[<>/]+\p{L}*>?`)

// frequentWords returns the n most frequent words of the examples' prompts
// and answers (ties broken alphabetically), for a tiny tokenizer.
func frequentWords(data dataset.SliceDataset, n int) []string {
	texts := make([]string, len(data))
	for i, ex := range data {
		texts[i] = ex.Text() + " " + ex.Answer
		for _, m := range ex.Messages {
			texts[i] += " " + m.Content
		}
	}
	return tokenizer.FrequentWords(texts, wordRE, n)
}
