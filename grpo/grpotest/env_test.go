package grpotest_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/grpo/grpotest"
)

// echoEnv asks for a word three times; flaws switch on contract violations.
type echoEnv struct {
	random, endless, panics, mutates, fails, empty bool
}

type echoEpisode struct {
	env   *echoEnv
	word  string
	turn  int
	seen  int
	moves []string
}

func (e *echoEnv) Episode(i int) (grpo.Episode, error) {
	words := []string{"cat", "dog", "fish"}
	w := words[i%len(words)]
	if e.random {
		w = words[rand.IntN(len(words))] + fmt.Sprint(rand.IntN(1000))
	}
	return &echoEpisode{env: e, word: w}, nil
}

func (ep *echoEpisode) Observe() dataset.Example {
	if ep.env.mutates {
		ep.seen++
	}
	if ep.env.empty {
		return dataset.Example{}
	}
	return dataset.Example{Prompt: fmt.Sprintf("turn %d (%d): say %s after %v", ep.turn, ep.seen, ep.word, ep.moves), Answer: ep.word}
}

func (ep *echoEpisode) Step(completion string) (bool, error) {
	if ep.env.panics && strings.Contains(completion, "\x00") {
		panic("cannot parse")
	}
	if ep.env.fails && completion == "" {
		return false, fmt.Errorf("empty move")
	}
	ep.moves = append(ep.moves, fmt.Sprintf("%.10s", completion))
	ep.turn++
	return !ep.env.endless && ep.turn >= 3, nil
}

func TestTestEnv(t *testing.T) {
	tests := []struct {
		name string
		env  *echoEnv
		want []string // substrings of the report; none means it must pass
	}{
		{"conforming", &echoEnv{}, nil},
		{"nondeterministic", &echoEnv{random: true}, []string{"is not deterministic"}},
		{"endless", &echoEnv{endless: true}, []string{"still running after 64 moves"}},
		{"panics", &echoEnv{panics: true}, []string{"panic: cannot parse"}},
		{"observe mutates", &echoEnv{mutates: true}, []string{"two Observe calls differ"}},
		{"step fails", &echoEnv{fails: true}, []string{"a bad move must be scored, not failed: empty move"}},
		{"no prompt", &echoEnv{empty: true}, []string{"Observe returned neither Prompt nor Messages nor PromptIDs"}},
		{"two flaws", &echoEnv{panics: true, empty: true}, []string{"panic: cannot parse", "neither Prompt nor Messages"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := grpotest.TestEnv(tc.env)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("TestEnv = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("TestEnv = nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("report lacks %q:\n%v", w, err)
				}
			}
		})
	}
}
