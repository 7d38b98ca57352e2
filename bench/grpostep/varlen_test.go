package main

import (
	"context"
	"slices"
	"testing"

	"github.com/grpokit/grpokit/model"
)

// TestScheduledLengthMatchesPython checks the schedule against the values
// bench/varlen_schedule.py (the PyTorch side's) prints for examples 0–2,
// rows 0–3, so that both sides train on the same completion lengths.
func TestScheduledLengthMatchesPython(t *testing.T) {
	want := []int{215, 118, 125, 25, 43, 60, 232, 128, 168, 16, 103, 16}
	var got []int
	for e := range 3 {
		for j := range 4 {
			got = append(got, scheduledLength(e, j))
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("scheduledLength = %v, want %v", got, want)
	}
}

// TestStopScheduleEndsRows samples from a tiny model under the schedule's
// constraint and checks every row's length and that it ends with EOS only
// at its end, with finished rows dropped from the batch and kept.
func TestStopScheduleEndsRows(t *testing.T) {
	m, err := model.New(tinyShape(), 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	lengths := []int{5, 1, 9, 3, 9, 2, 7, 4}
	eos := m.Config().EOSTokenIDs[0]
	for _, keep := range []bool{false, true} {
		out, err := m.Generate(context.Background(), [][]int{{5, 6, 7}, {8, 9}}, model.GenerateConfig{MaxNewTokens: 12, NumGenerations: 4, Seed: 2, KeepFinishedRows: keep, Constraint: newStopSchedule(lengths, eos, m.Config().VocabSize), Sampling: model.Sampling{Temperature: 1}})
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range out {
			if len(c.Tokens) != lengths[i] || !c.Stopped || slices.Index(c.Tokens, eos) != lengths[i]-1 {
				t.Errorf("keep=%v: row %d: %v (stopped %v), want %d tokens ending with EOS %d", keep, i, c.Tokens, c.Stopped, lengths[i], eos)
			}
		}
	}
}
