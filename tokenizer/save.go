package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/grpokit/grpokit/internal/atomicfile"
	"github.com/grpokit/grpokit/internal/regfile"
)

// sourceFiles are the files of a model folder LoadDir reads, which
// WriteFiles writes back unchanged.
var sourceFiles = []string{"tokenizer.json", "tokenizer_config.json", "generation_config.json", "chat_template.jinja"}

// readSources returns the bytes of those of sourceFiles present in dir.
func readSources(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, name := range sourceFiles {
		b, err := regfile.ReadFile(filepath.Join(dir, name), regfile.MaxMeta)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("tokenizer: %w", err)
		}
		out[name] = b
	}
	return out, nil
}

// WriteFiles writes the tokenizer's files into dir (creating it), so that
// a folder of saved weights can be loaded alone: tokenizer.json,
// tokenizer_config.json and chat_template.jinja as LoadDir read them, and
// generation_config.json, as read or, when the source had none, one
// holding the BOS, EOS and PAD ids. Each file is written to a temporary
// name and renamed. It is an error for a Pretrained not made by LoadDir.
func (p *Pretrained) WriteFiles(dir string) error {
	if p.files == nil {
		return errors.New("tokenizer: WriteFiles: the tokenizer was not loaded from a folder (LoadDir)")
	}
	files := map[string][]byte{}
	for k, v := range p.files {
		files[k] = v
	}
	if _, ok := files["generation_config.json"]; !ok {
		gen := map[string]any{"eos_token_id": p.EOS, "pad_token_id": p.PAD, "bos_token_id": nil}
		if p.BOS >= 0 {
			gen["bos_token_id"] = p.BOS
		}
		b, err := json.MarshalIndent(gen, "", "  ")
		if err != nil {
			return fmt.Errorf("tokenizer: generation_config.json: %w", err)
		}
		files["generation_config.json"] = append(b, '\n')
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	names := make([]string, 0, len(files))
	for k := range files {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := atomicfile.Write(filepath.Join(dir, name), func(f *os.File) error {
			_, err := f.Write(files[name])
			return err
		}); err != nil {
			return fmt.Errorf("tokenizer: %w", err)
		}
	}
	return nil
}
