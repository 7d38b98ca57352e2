package grpo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
	"github.com/grpokit/grpokit/grpo/grpotest"
	"github.com/grpokit/grpokit/reward"
)

// relayEnv is a two-turn game: say one word, then the next one in the list.
type relayEnv struct{}

type relayEpisode struct {
	i, turn int
	moves   []string
}

func (relayEnv) Episode(i int) (grpo.Episode, error) { return &relayEpisode{i: i}, nil }

func (e *relayEpisode) word() string { return words[1+(e.i+e.turn)%(len(words)-1)] }

func (e *relayEpisode) Observe() dataset.Example {
	return dataset.Example{Prompt: "say " + e.word(), Answer: e.word(), Meta: map[string]string{"moves": fmt.Sprint(e.moves)}}
}

func (e *relayEpisode) Step(c string) (bool, error) {
	e.moves = append(e.moves, c)
	e.turn++
	return e.turn == 2, nil
}

func TestTrainEnv(t *testing.T) {
	if err := grpotest.TestEnv(relayEnv{}); err != nil {
		t.Fatalf("relayEnv breaks the Env contract: %v", err)
	}
	cfg := smallConfig(t)
	cfg.MaxSteps = 80
	cfg.EpisodeSelect = grpo.SelectBest
	p := newPolicy(t)
	var mu sync.Mutex // rewards run concurrently
	turns := map[int]bool{}
	turnAware := reward.ScorerFunc(func(s reward.Sample) float64 {
		mu.Lock()
		turns[s.Turn] = true
		mu.Unlock()
		return exact(s.Prompt, s.Completion, s.Answer)
	})
	tr, err := grpo.NewTrainer(p, cfg, reward.Named{Name: "exact", Weight: 1, Scorer: turnAware})
	if err != nil {
		t.Fatal(err)
	}
	var ms []grpo.Metrics
	tr.OnStep = func(m grpo.Metrics) { ms = append(ms, m) }
	if err := tr.TrainEnv(context.Background(), relayEnv{}); err != nil {
		t.Fatal(err)
	}
	// 2 episodes per step × 2 turns × G completions.
	if got, want := ms[0]["rollouts"], float64(2*2*cfg.NumGenerations); got != want {
		t.Errorf("rollouts per step = %v, want %v", got, want)
	}
	if !turns[0] || !turns[1] || len(turns) != 2 {
		t.Errorf("rewards saw turns %v, want 0 and 1", turns)
	}
	first, last := meanReward(ms[:5]), meanReward(ms[len(ms)-5:])
	t.Logf("env reward %.3f → %.3f", first, last)
	if last < 0.8 {
		t.Errorf("env reward %.3f → %.3f; want ≥ 0.8", first, last)
	}
	if err := tr.TrainEnv(context.Background(), nil); err == nil {
		t.Error("TrainEnv(nil) succeeded")
	}
}
