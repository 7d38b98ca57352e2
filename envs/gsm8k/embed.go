package gsm8k

import (
	"bytes"
	"compress/gzip"
	"embed"
	"fmt"
	"io"
)

// The GSM8K train and test splits, gzip'd, shipped inside the module so
// that nothing depends on a data folder beside the checkout (see
// data/SOURCE.md for the source and data/LICENSE for the MIT license).
//
//go:embed data/train.jsonl.gz data/test.jsonl.gz
var shipped embed.FS

// Train returns the 7,473 problems of GSM8K's train split, read from the
// copy shipped inside this package. Each call parses the data afresh
// (about 4 MB of JSON), so callers keep the result.
func Train() ([]Example, error) { return readShipped("train.jsonl") }

// Test returns the 1,319 problems of GSM8K's test split, read from the copy
// shipped inside this package.
func Test() ([]Example, error) { return readShipped("test.jsonl") }

func readShipped(name string) ([]Example, error) {
	raw, err := shippedBytes(name)
	if err != nil {
		return nil, err
	}
	return Read(bytes.NewReader(raw), name)
}

// shippedBytes returns the uncompressed bytes of a shipped split.
func shippedBytes(name string) ([]byte, error) {
	data, err := shipped.ReadFile("data/" + name + ".gz")
	if err != nil {
		return nil, fmt.Errorf("gsm8k: shipped %s: %w", name, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("gsm8k: shipped %s: %w", name, err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, fmt.Errorf("gsm8k: shipped %s: %w", name, err)
	}
	return raw, nil
}
