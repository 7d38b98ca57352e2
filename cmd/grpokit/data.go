package main

import (
	"cmp"
	"fmt"
	"regexp"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/envs/gsm8k"
	"github.com/grpokit/grpokit/envs/poker"
	"github.com/grpokit/grpokit/envs/wordle"
	"github.com/grpokit/grpokit/tokenizer"
)

// loadData returns the training and evaluation examples of c's dataset.
func loadData(c *runConfig) (train, eval dataset.SliceDataset, err error) {
	d := c.Dataset
	size := cmp.Or(d.Size, 10000)
	switch d.Builtin {
	case "":
		if train, err = dataset.LoadDataset(d.Path, d.JSONLFields); err != nil {
			return nil, nil, err
		}
		eval = train
		if d.EvalPath != "" {
			if eval, err = dataset.LoadDataset(d.EvalPath, d.JSONLFields); err != nil {
				return nil, nil, err
			}
		}
	case "gsm8k":
		tr, err := gsm8k.Train()
		if err != nil {
			return nil, nil, err
		}
		te, err := gsm8k.Test()
		if err != nil {
			return nil, nil, err
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
				n = max(c.Eval.N, 1)
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
				n = max(c.Eval.N, 1)
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
		return nil, nil, fmt.Errorf("grpokit: dataset.builtin %q: want gsm8k, poker or wordle", d.Builtin)
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
	if c.Eval.N > 0 && len(eval) > c.Eval.N {
		eval = eval[:c.Eval.N]
	}
	return train, eval, nil
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
