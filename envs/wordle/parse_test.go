package wordle

import (
	"errors"
	"strings"
	"testing"
)

func TestParseGuess(t *testing.T) {
	tests := []struct {
		reply, want string
		err         error
		msg         string
	}{
		{"<think>vowels</think><guess>crane</guess>", "crane", nil, ""},
		{"<think>x</think>\n<guess> CRANE </guess>\n", "crane", nil, ""},
		{"<guess>slate</guess> no, <guess>crane</guess>", "crane", nil, ""}, // the last block counts
		{"crane", "", ErrNoGuess, "wordle: no <guess>…</guess> in the reply"},
		{"<guess>crane", "", ErrNoGuess, ""},
		{"<guess>cranes</guess>", "", ErrNotWord, `wordle: guess is not five letters: "cranes"`},
		{"<guess>cr4ne</guess>", "", ErrNotWord, ""},
		{"<guess></guess>", "", ErrNotWord, `wordle: guess is not five letters: ""`},
		{"<guess>xyzzy</guess>", "", ErrUnknownWord, `wordle: not an allowed word: "xyzzy"`},
	}
	for _, tc := range tests {
		got, err := ParseGuess(tc.reply)
		if !errors.Is(err, tc.err) || got != tc.want {
			t.Errorf("ParseGuess(%q) = %q, %v; want %q, %v", tc.reply, got, err, tc.want, tc.err)
		}
		if tc.msg != "" && (err == nil || err.Error() != tc.msg) {
			t.Errorf("ParseGuess(%q) error = %v, want %q", tc.reply, err, tc.msg)
		}
	}
}

func TestWordLists(t *testing.T) {
	a, al := Answers(), Allowed()
	if len(a) != 2315 || len(al) != 12972 || a[0] != "aback" {
		t.Fatalf("lists: %d answers (first %q), %d allowed", len(a), a[0], len(al))
	}
	for _, w := range a {
		if !IsAllowed(w) {
			t.Fatalf("answer %q not allowed", w)
		}
	}
	if !IsAllowed("SOARE") || IsAllowed("xyzzy") || IsAllowed("soar") {
		t.Error("IsAllowed")
	}
	a[0] = "zzzzz"
	if Answers()[0] != "aback" {
		t.Error("Answers returns the package's own slice")
	}
}

func FuzzParseGuess(f *testing.F) {
	for _, s := range []string{"<think>x</think><guess>crane</guess>", "<guess>", "</guess><guess>", "<guess>CRANE</guess>", "<guess>é</guess>", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		w, err := ParseGuess(reply)
		if err != nil {
			if !errors.Is(err, ErrNoGuess) && !errors.Is(err, ErrNotWord) && !errors.Is(err, ErrUnknownWord) {
				t.Fatalf("ParseGuess(%q): unexpected error kind %v", reply, err)
			}
			return
		}
		if !IsAllowed(w) || strings.ToLower(w) != w {
			t.Fatalf("ParseGuess(%q) = %q, not an allowed lower-case word", reply, w)
		}
		if w2, err := ParseGuess("<guess>" + w + "</guess>"); err != nil || w2 != w {
			t.Fatalf("round trip of %q: %q, %v", w, w2, err)
		}
	})
}

func FuzzParseWord(f *testing.F) {
	for _, s := range []string{"crane", " Crane\n", "cranes", "", "\x00\x00\x00\x00\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		w, err := ParseWord(s)
		if err == nil && (len(w) != WordLen || !IsAllowed(w)) {
			t.Fatalf("ParseWord(%q) = %q", s, w)
		}
	})
}
