package agent

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
)

func TestCalculator(t *testing.T) {
	calc := Calculator()
	ts, _ := NewToolset(calc, Dates())
	for _, tc := range []struct{ expr, want string }{
		{"2+3*4", "14"},
		{"(2+3)*4", "20"},
		{"123456789*987654321", "121932631112635269"}, // exact beyond float64
		{"1/3*3", "1"},
		{"10/4", "2.5"},
		{"2/3", "0.666666666667"},
		{"-2^2", "-4"},
		{"2^-2", "0.25"},
		{"2^3^2", "512"},
		{"17 % 5", "2"},
		{"1,000 + 2", "1002"},
		{"1/0", `{"error":"division by zero"}`},
		{"2+", `unexpected end of expression`},
		{"2)", `unexpected \")\" at position 2`},
		{"import os", `unexpected \"i\" at position 1`},
		{"9^99999", "at most 4096"},
	} {
		r := Executor{}.RunCall(context.Background(), ts, Call{Name: "calculator", Arguments: json.RawMessage(`{"expression": "` + tc.expr + `"}`)})
		if r.Err == nil && r.Content != tc.want || r.Err != nil && !strings.Contains(r.Content, tc.want) {
			t.Errorf("%s = %s (%v), want %s", tc.expr, r.Content, r.Err, tc.want)
		}
	}
	for _, tc := range []struct{ args, want string }{
		{`{"date": "2024-02-28", "add_days": 1}`, "2024-02-29 Thursday"},
		{`{"date": "2024-01-01", "until": "2025-01-01"}`, "366"},
		{`{"date": "yesterday"}`, "want YYYY-MM-DD"},
	} {
		r := Executor{}.RunCall(context.Background(), ts, Call{Name: "dates", Arguments: json.RawMessage(tc.args)})
		if !strings.Contains(r.Content, tc.want) {
			t.Errorf("dates %s = %s, want %s", tc.args, r.Content, tc.want)
		}
	}
	if _, err := Builtin("python"); err == nil || !strings.Contains(err.Error(), "have: calculator, dates") {
		t.Errorf("Builtin(python): %v", err)
	}
}
