package model

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/grpokit/grpokit/internal/atomicfile"
	"github.com/grpokit/grpokit/internal/jsonfile"
)

// PromptFormatFile is the file in a saved model folder that records how
// the model was prompted in training when that was not through its chat
// template: {"prompts": "plain"} for plain-text prompts sent as they are
// (TRL's "standard" dataset format). A folder without it was prompted
// through its chat template, or does not say.
const PromptFormatFile = "prompt_format.json"

// SavePlainPrompts records in dir that the model was trained on plain-text
// prompts (PromptFormatFile), so that an export runs it the same way
// (gguf's Modelfile sends the prompt without the chat template).
func SavePlainPrompts(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("model: save prompt format: %w", err)
	}
	err := atomicfile.Write(filepath.Join(dir, PromptFormatFile), func(f *os.File) error {
		_, err := f.WriteString(`{"prompts": "plain"}` + "\n")
		return err
	})
	if err != nil {
		return fmt.Errorf("model: save prompt format: %w", err)
	}
	return nil
}

// PlainPrompts reports whether dir records plain-text prompts
// (SavePlainPrompts); false and no error when it records nothing.
func PlainPrompts(dir string) (bool, error) {
	path := filepath.Join(dir, PromptFormatFile)
	var pf struct {
		Prompts string `json:"prompts"`
	}
	found, err := jsonfile.ReadOptional(path, &pf)
	if err != nil {
		return false, fmt.Errorf("model: %w", err)
	}
	if !found {
		return false, nil
	}
	switch pf.Prompts {
	case "plain":
		return true, nil
	case "chat":
		return false, nil
	}
	return false, fmt.Errorf("model: %s: prompts %q: want \"plain\" or \"chat\"", path, pf.Prompts)
}
