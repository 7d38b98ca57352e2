package dataset

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/parquet-go/parquet-go"
)

// LoadDataset reads a dataset in the formats Hugging Face datasets are
// downloaded in: Parquet (.parquet, the Hub's own format), JSON lines
// (.jsonl, or .json holding JSON lines or one array of objects), and either
// JSON form gzipped (.jsonl.gz, .json.gz). path may be a glob pattern such
// as "gsm8k/main/train-*.parquet": the files it matches are read in name
// order as one dataset, which is how the Hub shards a split. f names the
// columns (the zero value: TRL's prompt, messages and answer), and each row
// becomes an Example as ReadJSONL describes; Parquet strings, numbers,
// booleans and lists of {role, content} structs map as their JSON forms
// do. Errors name the file and the line or row.
func LoadDataset(path string, f JSONLFields) (SliceDataset, error) {
	files, err := datasetFiles(path)
	if err != nil {
		return nil, err
	}
	var out SliceDataset
	for _, file := range files {
		part, err := loadDatasetFile(file, f)
		if err != nil {
			return nil, err
		}
		out = append(out, part...)
	}
	return out, nil
}

// datasetFiles returns the files path names: itself, or a glob pattern's
// matches in name order.
func datasetFiles(path string) ([]string, error) {
	if !strings.ContainsAny(path, "*?[") {
		st, err := os.Stat(path)
		if err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		if st.IsDir() {
			return nil, fmt.Errorf("dataset %s is a folder: name a file, or a pattern such as %s",
				path, filepath.Join(path, "train-*.parquet"))
		}
		return []string{path}, nil
	}
	files, err := filepath.Glob(path) // sorted
	if err != nil {
		return nil, fmt.Errorf("dataset pattern %s: %w", path, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("dataset pattern %s matches no file", path)
	}
	return files, nil
}

// loadDatasetFile reads one file, its format told by its name.
func loadDatasetFile(path string, f JSONLFields) (SliceDataset, error) {
	name := strings.ToLower(path)
	gz := strings.HasSuffix(name, ".gz")
	name = strings.TrimSuffix(name, ".gz")
	ext := filepath.Ext(name)
	if ext == ".parquet" && !gz {
		return loadParquet(path, f)
	}
	if ext != ".jsonl" && ext != ".json" {
		return nil, fmt.Errorf("dataset %s: unknown format: want .parquet, .jsonl or .json (optionally .gz)", path)
	}
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer file.Close()
	var r io.Reader = file
	if gz {
		zr, err := gzip.NewReader(file)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	br := bufio.NewReader(r)
	if ext == ".json" {
		// An array of objects, or JSON lines under a .json name.
		if first, err := firstNonSpace(br); err == nil && first == '[' {
			return readJSONArray(br, path, f)
		}
	}
	return ReadJSONL(br, path, f)
}

// firstNonSpace skips leading white space in r and returns, without
// consuming it, the first other byte.
func firstNonSpace(r *bufio.Reader) (byte, error) {
	for {
		b, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		if strings.IndexByte(" \t\r\n", b) < 0 {
			return b, r.UnreadByte()
		}
	}
}

// readJSONArray reads a dataset written as one JSON array of row objects.
func readJSONArray(r io.Reader, name string, f JSONLFields) (SliceDataset, error) {
	var rows []map[string]json.RawMessage
	if err := json.NewDecoder(r).Decode(&rows); err != nil {
		return nil, fmt.Errorf("dataset %s: want a JSON array of objects or JSON lines: %v", name, err)
	}
	out := make(SliceDataset, 0, len(rows))
	for i, row := range rows {
		ex, err := f.example(row)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: row %d: %w", name, i+1, err)
		}
		out = append(out, ex)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset %s: no examples", name)
	}
	return out, nil
}

// loadParquet reads a Parquet file's rows. A damaged file must give an
// error, and the Parquet library can panic on one, so a panic becomes an
// error naming the file.
func loadParquet(path string, f JSONLFields) (out SliceDataset, err error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	defer file.Close()
	st, err := file.Stat()
	if err != nil {
		return nil, fmt.Errorf("dataset: %w", err)
	}
	row := 0
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("dataset %s: row %d: damaged Parquet file: %v", path, row+1, p)
		}
	}()
	pf, err := parquet.OpenFile(file, st.Size())
	if err != nil {
		return nil, fmt.Errorf("dataset %s: not a readable Parquet file: %w", path, err)
	}
	r := parquet.NewReader(pf)
	defer r.Close()
	for ; ; row++ {
		values := map[string]any{}
		if err := r.Read(&values); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, fmt.Errorf("dataset %s: row %d: %w", path, row+1, err)
		}
		// Each value as JSON, so that a row means what the same row as a
		// JSON line means.
		fields := make(map[string]json.RawMessage, len(values))
		for k, v := range values {
			if fields[k], err = json.Marshal(v); err != nil {
				return nil, fmt.Errorf("dataset %s: row %d: %q: %w", path, row+1, k, err)
			}
		}
		ex, err := f.example(fields)
		if err != nil {
			return nil, fmt.Errorf("dataset %s: row %d: %w", path, row+1, err)
		}
		out = append(out, ex)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("dataset %s: no examples", path)
	}
	return out, nil
}
