// Package jsonfile reads the optional JSON files of a model folder
// (generation_config.json, tokenizer_config.json, constraint.json): a
// missing file is not an error.
package jsonfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"

	"github.com/grpokit/grpokit/internal/regfile"
)

// ReadOptional decodes the JSON file at path into v and reports whether
// the file exists: false and no error (v untouched) when it does not.
// An error names path (os's errors do; a decoding error is prefixed
// with it).
func ReadOptional(path string, v any) (bool, error) {
	b, err := regfile.ReadFile(path, regfile.MaxMeta)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return false, fmt.Errorf("%s: %w", path, err)
	}
	return true, nil
}
