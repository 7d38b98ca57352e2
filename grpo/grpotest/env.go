package grpotest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/grpokit/grpokit/dataset"
	"github.com/grpokit/grpokit/grpo"
)

// MaxTurns bounds the episodes TestEnv plays; an episode still running
// after MaxTurns moves is reported.
const MaxTurns = 64

// probeMoves are the completions TestEnv plays: the kinds of text a policy
// emits early in training (empty, garbage, very long, invalid UTF-8).
var probeMoves = []string{
	"",
	"hello",
	"<answer>42</answer>",
	"\x00\xff\xfe not utf-8",
	strings.Repeat("word ", 2000),
}

// TestEnv checks that env honours the grpo.Env contract and reports every
// violation at once, joined with errors.Join (nil when there is none), as
// slogtest.TestHandler does. It checks that:
//
//   - Episode(i) succeeds and returns a non-nil Episode, for small and
//     large i;
//   - Observe gives a prompt (Prompt, Messages or PromptIDs) and does not change the
//     episode (two calls are equal);
//   - Step accepts any text (empty, garbage, long, invalid UTF-8) without
//     panicking and without an error;
//   - every episode ends within MaxTurns moves of such text;
//   - the env is deterministic: replaying Episode(i) with the same moves
//     gives the same observations and the same end.
//
// moves, when given, are played (in turn, cycling) instead of the built-in
// probes; give moves that make progress when garbage never ends a game.
func TestEnv(env grpo.Env, moves ...string) error {
	if env == nil {
		return errors.New("grpotest: TestEnv: nil Env")
	}
	if len(moves) == 0 {
		moves = probeMoves
	}
	var errs []error
	report := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("grpotest: "+format, args...))
	}
	for _, i := range []int{0, 1, 7, 1000003} {
		for shift := range moves {
			first, err := playEpisode(env, i, moves, shift)
			if err != nil {
				report("episode %d (moves from %d): %v", i, shift, err)
				continue
			}
			again, err := playEpisode(env, i, moves, shift)
			if err != nil {
				report("episode %d replay: %v", i, err)
				continue
			}
			if !reflect.DeepEqual(first, again) {
				report("episode %d is not deterministic: replaying the same moves gave different observations or end (%d vs %d turns)",
					i, len(first.obs), len(again.obs))
			}
		}
	}
	return errors.Join(errs...)
}

// transcript is what one play of an episode showed.
type transcript struct {
	obs  []dataset.Example
	done bool
}

// playEpisode plays episode i with moves (starting at moves[shift]) and
// returns what it observed; contract violations are errors.
func playEpisode(env grpo.Env, i int, moves []string, shift int) (tr transcript, err error) {
	var errs []error
	defer func() {
		if r := recover(); r != nil {
			errs = append(errs, fmt.Errorf("panic: %v", r))
		}
		err = errors.Join(errs...)
	}()
	ep, err := env.Episode(i)
	if err != nil {
		return tr, fmt.Errorf("Episode(%d): %w", i, err)
	}
	if ep == nil {
		return tr, fmt.Errorf("Episode(%d) returned a nil Episode and no error", i)
	}
	for turn := 0; turn < MaxTurns; turn++ {
		obs := ep.Observe()
		if obs.Prompt == "" && len(obs.Messages) == 0 && len(obs.PromptIDs) == 0 {
			errs = append(errs, fmt.Errorf("turn %d: Observe returned neither Prompt nor Messages nor PromptIDs", turn))
		}
		if again := ep.Observe(); !reflect.DeepEqual(obs, again) {
			errs = append(errs, fmt.Errorf("turn %d: two Observe calls differ (Observe must not change the episode)", turn))
		}
		tr.obs = append(tr.obs, obs)
		move := moves[(shift+turn)%len(moves)]
		done, err := ep.Step(move)
		if err != nil {
			errs = append(errs, fmt.Errorf("turn %d: Step(%.20q) returned an error; a bad move must be scored, not failed: %w", turn, move, err))
			return tr, nil
		}
		if done {
			tr.done = true
			return tr, nil
		}
	}
	errs = append(errs, fmt.Errorf("episode still running after %d moves", MaxTurns))
	return tr, nil
}
