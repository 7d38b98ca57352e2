// Package torchref reads the JSON that the PyTorch side of the benchmarks
// (bench/torch_matmul.py, bench/torch_model.py) writes: an "info" line
// about the PyTorch build and one table of figures by workload name.
package torchref

import (
	"encoding/json"
	"fmt"
	"os"
)

// Load reads path and returns its table named key ("gflops" or "seconds")
// and its info line. An empty path gives an empty table and no error: the
// PyTorch side is optional.
func Load(path, key string) (values map[string]float64, info string, err error) {
	values = map[string]float64{}
	if path == "" {
		return values, "", nil
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, "", fmt.Errorf("torch results: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, "", fmt.Errorf("torch results %s: %w", path, err)
	}
	table, ok := fields[key]
	if !ok {
		return nil, "", fmt.Errorf("torch results %s: no %q table", path, key)
	}
	if err := json.Unmarshal(table, &values); err != nil {
		return nil, "", fmt.Errorf("torch results %s: %s: %w", path, key, err)
	}
	if s, ok := fields["info"]; ok {
		if err := json.Unmarshal(s, &info); err != nil {
			return nil, "", fmt.Errorf("torch results %s: info: %w", path, err)
		}
	}
	return values, info, nil
}
