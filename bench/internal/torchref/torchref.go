// Package torchref reads the JSON that the PyTorch side of the benchmarks
// (bench/torch_matmul.py, bench/torch_model.py) writes: an "info" line
// about the PyTorch build and one table of figures by workload name.
package torchref

import (
	"encoding/json"
	"fmt"
	"os"
)

// File is one results JSON, read once: its info line, its label (the
// PyTorch run's name, "" when it has none) and its tables.
type File struct {
	Path, Info, Label string
	fields            map[string]json.RawMessage
}

// Read reads and parses path.
func Read(path string) (*File, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("torch results: %w", err)
	}
	f := &File{Path: path}
	if err := json.Unmarshal(raw, &f.fields); err != nil {
		return nil, fmt.Errorf("torch results %s: %w", path, err)
	}
	for key, dst := range map[string]*string{"info": &f.Info, "label": &f.Label} {
		if s, ok := f.fields[key]; ok {
			if err := json.Unmarshal(s, dst); err != nil {
				return nil, fmt.Errorf("torch results %s: %s: %w", path, key, err)
			}
		}
	}
	return f, nil
}

// Table returns the table named key ("gflops", "seconds", "memory").
func (f *File) Table(key string) (map[string]float64, error) {
	table, ok := f.fields[key]
	if !ok {
		return nil, fmt.Errorf("torch results %s: no %q table", f.Path, key)
	}
	values := map[string]float64{}
	if err := json.Unmarshal(table, &values); err != nil {
		return nil, fmt.Errorf("torch results %s: %s: %w", f.Path, key, err)
	}
	return values, nil
}

// Load reads path and returns its table named key ("gflops" or "seconds")
// and its info line. An empty path gives an empty table and no error: the
// PyTorch side is optional.
func Load(path, key string) (values map[string]float64, info string, err error) {
	if path == "" {
		return map[string]float64{}, "", nil
	}
	f, err := Read(path)
	if err != nil {
		return nil, "", err
	}
	if values, err = f.Table(key); err != nil {
		return nil, "", err
	}
	return values, f.Info, nil
}
