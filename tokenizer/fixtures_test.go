package tokenizer

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/grpokit/grpokit/internal/sharedtest"
)

// sharedDir returns ../shared, or "" if absent.
func sharedDir() string {
	dir, _ := sharedtest.Find()
	return dir
}

var fixtureModels = []string{"qwen3", "llama31", "gemma3"}

type fixtureSet struct {
	toks    map[string]*Tokenizer
	corpus  []string
	golden  map[string]goldenFile
	loadDur time.Duration
	err     error
}

type goldenFile struct {
	IDs     [][]int  `json:"ids"`
	Decoded []string `json:"decoded"`
}

var (
	fixOnce sync.Once
	fix     fixtureSet
)

// fixtures loads the three big tokenizers once per test binary.
func fixtures(tb testing.TB) *fixtureSet {
	tb.Helper()
	dir := sharedtest.Dir(tb) // skips (fails in CI) when ../shared is absent
	fixOnce.Do(func() {
		start := time.Now()
		fix.toks = map[string]*Tokenizer{}
		fix.golden = map[string]goldenFile{}
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, m := range fixtureModels {
			wg.Add(1)
			go func() {
				defer wg.Done()
				t, err := FromFile(filepath.Join(dir, "tokenizers", m+".tokenizer.json.gz"))
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					fix.err = err
					return
				}
				fix.toks[m] = t
			}()
		}
		wg.Wait()
		fix.loadDur = time.Since(start)
		if fix.err != nil {
			return
		}
		fix.err = readJSON(filepath.Join(dir, "tokenizers", "corpus.json"), &fix.corpus)
		for _, m := range fixtureModels {
			var g goldenFile
			if err := readJSON(filepath.Join(dir, "tokenizers", m+".golden.json"), &g); err != nil {
				fix.err = err
			}
			fix.golden[m] = g
		}
	})
	if fix.err != nil {
		tb.Fatal(fix.err)
	}
	return &fix
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}

func TestFixturesEncodeDecode(t *testing.T) {
	f := fixtures(t)
	t.Logf("loaded %d tokenizers in %v", len(f.toks), f.loadDur)
	for _, m := range fixtureModels {
		t.Run(m, func(t *testing.T) {
			tk, g := f.toks[m], f.golden[m]
			if len(g.IDs) != len(f.corpus) || len(g.Decoded) != len(f.corpus) {
				t.Fatalf("golden has %d ids / %d decoded for %d strings", len(g.IDs), len(g.Decoded), len(f.corpus))
			}
			pass := 0
			for i, s := range f.corpus {
				got := tk.Encode(s, false)
				ok := equalInts(got, g.IDs[i])
				if !ok {
					t.Errorf("encode %q:\n got %v\nwant %v", s, got, g.IDs[i])
				}
				dec := tk.Decode(g.IDs[i], false)
				if dec != g.Decoded[i] {
					t.Errorf("decode %q:\n got %q\nwant %q", s, dec, g.Decoded[i])
					ok = false
				}
				if ok {
					pass++
				}
			}
			t.Logf("%s: %d/%d corpus strings match ids and decoded text", m, pass, len(f.corpus))
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
