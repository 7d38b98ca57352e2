package wordle

import (
	_ "embed"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The word lists of the original game (see data/SOURCE.md) and the
// generated start-word ranking.
var (
	//go:embed data/answers.txt
	answersTxt string
	//go:embed data/allowed.txt
	allowedTxt string
	//go:embed data/startwords.txt
	startWordsTxt string
)

var lists = sync.OnceValue(func() (l struct {
	answers, allowed []string
	allowedSet       map[string]bool
	start            []StartWord
}) {
	l.answers = strings.Fields(answersTxt)
	l.allowed = strings.Fields(allowedTxt)
	l.allowedSet = make(map[string]bool, len(l.allowed))
	for _, w := range l.allowed {
		l.allowedSet[w] = true
	}
	for _, line := range strings.Split(strings.TrimSpace(startWordsTxt), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			continue
		}
		bits, err := strconv.ParseFloat(f[1], 64)
		if err == nil {
			l.start = append(l.start, StartWord{Word: f[0], Bits: bits})
		}
	}
	return l
})

// Answers returns the 2,315 possible secret words, sorted, lower case.
func Answers() []string { return append([]string(nil), lists().answers...) }

// Allowed returns the 12,972 words the game accepts as guesses, sorted,
// lower case. Every answer is allowed.
func Allowed() []string { return append([]string(nil), lists().allowed...) }

// IsAllowed reports whether w (any case) is an accepted guess.
func IsAllowed(w string) bool {
	n, err := normalize(w)
	return err == nil && lists().allowedSet[n]
}

// StartWord is a first guess with its expected information.
type StartWord struct {
	Word string
	// Bits is the entropy, in bits, of the feedback this word gets when the
	// answer is uniform over Answers: the expected information it gives.
	Bits float64
}

// StartWords returns the best first guesses, best first, as computed by
// cmd/startwords (the embedded data/startwords.txt).
func StartWords() []StartWord { return append([]StartWord(nil), lists().start...) }

// SplitAnswers shuffles the answer list with seed and returns the first
// len-nTest words as train and the last nTest as held-out test words, each
// sorted. nTest is clamped to [0, len(Answers())].
func SplitAnswers(seed uint64, nTest int) (train, test []string) {
	a := Answers()
	nTest = max(0, min(nTest, len(a)))
	rng := rand.New(rand.NewPCG(seed, 0x5bd1e995))
	rng.Shuffle(len(a), func(i, j int) { a[i], a[j] = a[j], a[i] })
	train, test = a[:len(a)-nTest], a[len(a)-nTest:]
	sort.Strings(train)
	sort.Strings(test)
	return train, test
}
