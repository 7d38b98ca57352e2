package grpo

import (
	"fmt"

	"github.com/grpokit/grpokit/internal/strictcfg"
)

// DecodeConfig returns DefaultConfig with the settings of a JSON object
// whose keys are TRL's GRPOConfig names (the json tags of Config), then
// validated. A key Config does not know is an error that names the
// nearest known key ("unknown key \"lerning_rate\" (did you mean
// \"learning_rate\"?)"), so a typo never passes silently.
func DecodeConfig(data []byte) (Config, error) {
	c := DefaultConfig()
	if err := strictcfg.Decode(data, &c); err != nil {
		return c, fmt.Errorf("grpo: config: %w", err)
	}
	return c, c.Validate()
}

// LoadConfig reads a config file as DecodeConfig does: JSON, or YAML when
// the name ends in .yaml or .yml. A leading ~ in output_dir is the home
// folder, as in a shell.
func LoadConfig(path string) (Config, error) {
	c := DefaultConfig()
	if err := strictcfg.DecodeFile(path, &c); err != nil {
		return c, fmt.Errorf("grpo: config %w", err)
	}
	c.OutputDir = strictcfg.ExpandHome(c.OutputDir) // ~ as in a shell
	return c, c.Validate()
}
