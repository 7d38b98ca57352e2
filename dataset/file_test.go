package dataset_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/dataset"
)

// The fixtures in testdata/datasets were written by DuckDB (make.mjs): each
// table as Parquet and, as the reference, as DuckDB's own JSON lines.
const datasets = "testdata/datasets"

// sameExamples reports how two datasets differ, or "". Meta numbers are
// compared as numbers: DuckDB writes a double -2 as "-2.0", Go as "-2".
func sameExamples(got, want dataset.SliceDataset) string {
	if len(got) != len(want) {
		return "lengths " + strconv.Itoa(len(got)) + " and " + strconv.Itoa(len(want))
	}
	for i := range got {
		g, w := got[i], want[i]
		if g.Prompt != w.Prompt || g.Answer != w.Answer || !reflect.DeepEqual(g.Messages, w.Messages) || len(g.Meta) != len(w.Meta) {
			return "example " + strconv.Itoa(i) + ": " + strings.Join([]string{g.Prompt, g.Answer}, " | ") + " vs " + strings.Join([]string{w.Prompt, w.Answer}, " | ")
		}
		for k, wv := range w.Meta {
			gv, ok := g.Meta[k]
			gf, gerr := strconv.ParseFloat(gv, 64)
			wf, werr := strconv.ParseFloat(wv, 64)
			if !ok || (gv != wv && (gerr != nil || werr != nil || gf != wf)) {
				return "example " + strconv.Itoa(i) + " meta " + k + ": " + gv + " vs " + wv
			}
		}
	}
	return ""
}

func TestLoadDatasetParquet(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields dataset.JSONLFields
		n      int
		check  func(dataset.SliceDataset) bool
	}{
		// GSM8K's columns, unicode, a 24,000-character prompt, nulls and a
		// list column (not a Meta value).
		{"plain", dataset.JSONLFields{Prompt: "question"}, 4, func(d dataset.SliceDataset) bool {
			return strings.HasSuffix(d[0].Answer, "#### 72") && d[0].Meta["id"] == "1" && d[0].Meta["verified"] == "true" &&
				d[0].Meta["tags"] == "" && d[2].Prompt == "数一数：一、二、三" && len(d[3].Prompt) == 24000 && d[3].Answer == ""
		}},
		// TRL's conversational prompt, an integer answer, 5 zstd row groups.
		{"conversational", dataset.JSONLFields{}, 300, func(d dataset.SliceDataset) bool {
			m := d[7].Messages
			return len(m) == 2 && m[0].Role == "system" && m[1].Content == "What is 7 + 7?" && d[7].Answer == "14" &&
				d[299].Answer == "598" && d[8].Meta["source"] == "src-2"
		}},
		// A messages column whose last assistant turn is the answer.
		{"messages", dataset.JSONLFields{}, 3, func(d dataset.SliceDataset) bool {
			return d[1].Answer == "red" && len(d[1].Messages) == 2 && d[2].Answer == "" && len(d[2].Messages) == 1
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := dataset.LoadDataset(filepath.Join(datasets, tc.name+".parquet"), tc.fields)
			if err != nil {
				t.Fatal(err)
			}
			want, err := dataset.LoadDataset(filepath.Join(datasets, tc.name+".jsonl"), tc.fields)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.n {
				t.Fatalf("%d examples, want %d", len(got), tc.n)
			}
			if d := sameExamples(got, want); d != "" {
				t.Errorf("Parquet and DuckDB's JSON lines differ: %s", d)
			}
			if !tc.check(got) {
				t.Errorf("unexpected examples: %+v", got[:min(len(got), 3)])
			}
		})
	}
}

// The Hub shards a split as train-0000N-of-0000M.parquet; a pattern reads
// them in order as one dataset.
func TestLoadDatasetShards(t *testing.T) {
	got, err := dataset.LoadDataset(filepath.Join(datasets, "train-*-of-00002.parquet"), dataset.JSONLFields{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := dataset.LoadDataset(filepath.Join(datasets, "conversational.jsonl"), dataset.JSONLFields{})
	if err != nil {
		t.Fatal(err)
	}
	if d := sameExamples(got, want); d != "" {
		t.Errorf("shards differ from the whole table: %s", d)
	}
}

// JSON as an array of objects, and gzipped JSON lines, read as the plain
// JSON lines do.
func TestLoadDatasetJSONForms(t *testing.T) {
	lines, err := os.ReadFile(filepath.Join(datasets, "conversational.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := dataset.ReadJSONL(bytes.NewReader(lines), "x", dataset.JSONLFields{})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	array := "\n [" + strings.Join(strings.Split(strings.TrimSpace(string(lines)), "\n"), ",\n") + "]\n"
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(lines)
	zw.Close()
	for name, data := range map[string][]byte{
		"array.json":     []byte(array),
		"lines.json":     lines,
		"lines.jsonl.gz": gz.Bytes(),
		"LINES.JSONL":    lines,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := dataset.LoadDataset(path, dataset.JSONLFields{})
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if d := sameExamples(got, want); d != "" {
			t.Errorf("%s: %s", name, d)
		}
	}
}

func TestLoadDatasetErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(datasets, "null_prompt.parquet"), `null_prompt.parquet: row 2: no prompt: want a "prompt" or "messages" field`},
		{filepath.Join(datasets, "null_prompt.jsonl"), `null_prompt.jsonl:2: no prompt`},
		{datasets, "is a folder: name a file, or a pattern such as testdata/datasets/train-*.parquet"},
		{filepath.Join(datasets, "nothing-*.parquet"), "matches no file"},
		{filepath.Join(dir, "missing.parquet"), "no such file"},
		{write("d.csv", "prompt,answer\n"), "d.csv: unknown format: want .parquet, .jsonl or .json"},
		{write("notparquet.parquet", "PAR1 this is not a parquet file PAR1"), "notparquet.parquet: not a readable Parquet file"},
		{write("bad.json", `[{"prompt": "a"}, {"prompt": 3}]`), `bad.json: row 2: "prompt": want a string`},
		{write("empty.json", `[]`), "empty.json: no examples"},
		{write("broken.json", `[{"prompt": "a"`), "want a JSON array of objects or JSON lines"},
		{write("bad.jsonl.gz", "this is not a gzip stream at all"), "bad.jsonl.gz: gzip: invalid header"},
	} {
		_, err := dataset.LoadDataset(tc.path, dataset.JSONLFields{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("LoadDataset(%s): %v, want an error containing %q", tc.path, err, tc.want)
		}
	}
}

// A damaged Parquet file (a download cut short, a flipped byte) gives an
// error or, where the damage hides in the data, rows; never a panic.
func TestLoadDatasetDamagedParquet(t *testing.T) {
	good, err := os.ReadFile(filepath.Join(datasets, "conversational.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "d.parquet")
	load := func(data []byte) error {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := dataset.LoadDataset(path, dataset.JSONLFields{})
		return err
	}
	for n := 0; n < len(good); n += 7 {
		if err := load(good[:n]); err == nil {
			t.Errorf("the first %d of %d bytes read without an error", n, len(good))
		}
	}
	flip := func(i int) error {
		bad := bytes.Clone(good)
		bad[i] ^= 0x5a
		return load(bad)
	}
	for i := 0; i < len(good); i += 3 {
		_ = flip(i) // must return
	}
	// Flips that make the Parquet library index out of range (found by
	// flipping every byte): an error naming the file instead.
	for _, i := range []int{88, 1521} {
		if err := flip(i); err == nil || !strings.Contains(err.Error(), "d.parquet: row 1: damaged Parquet file") {
			t.Errorf("byte %d flipped: %v, want a damaged-file error", i, err)
		}
	}
}

// ExampleLoadDataset reads a Parquet file as the Hub serves it (a pattern
// such as "train-*.parquet" reads a split's shards); the messages column's last assistant turn becomes the answer.
func ExampleLoadDataset() {
	d, err := dataset.LoadDataset("testdata/datasets/messages.parquet", dataset.JSONLFields{})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, ex := range d {
		last := ex.Messages[len(ex.Messages)-1]
		fmt.Printf("%d messages, last %s: %q; answer %q\n", len(ex.Messages), last.Role, last.Content, ex.Answer)
	}
	// Output:
	// 1 messages, last user: "Say hi."; answer "hi"
	// 2 messages, last user: "Name a colour."; answer "red"
	// 1 messages, last user: "No reply yet."; answer ""
}
