package grpo

import (
	"fmt"

	"github.com/grpokit/grpokit/internal/strictcfg"
	"github.com/grpokit/grpokit/internal/trlkeys"
)

// DecodeConfig returns DefaultConfig with the settings of a JSON object
// whose keys are TRL's GRPOConfig names (the json tags of Config), then
// validated. TRL's keys that Config has no field for are accepted where
// they change nothing here (report_to, use_vllm: false, the Hub and
// distributed settings, ...) and are otherwise an error that says what
// grpokit does instead (use_vllm: true, optim: sgd, ...). Any other key is
// an error that names the nearest known key ("unknown key \"lerning_rate\"
// (did you mean \"learning_rate\"?)"), so a typo never passes silently.
func DecodeConfig(data []byte) (Config, error) {
	c := DefaultConfig()
	if err := strictcfg.DecodeForeign(data, &c, trlForeign); err != nil {
		return c, fmt.Errorf("grpo: config: %w", err)
	}
	return c.settled()
}

// LoadConfig reads a config file as DecodeConfig does: JSON, or YAML when
// the name ends in .yaml or .yml. A leading ~ in output_dir is the home
// folder, as in a shell.
func LoadConfig(path string) (Config, error) {
	c := DefaultConfig()
	if err := strictcfg.DecodeFileForeign(path, &c, trlForeign); err != nil {
		return c, fmt.Errorf("grpo: config %w", err)
	}
	c.OutputDir = strictcfg.ExpandHome(c.OutputDir) // ~ as in a shell
	return c.settled()
}

// trlForeign accepts or explains TRL's keys that Config has no field for.
func trlForeign(path string, v any) (bool, error) {
	known, _, err := trlkeys.Check(path, v)
	return known, err
}
