package agent

import (
	"context"

	"github.com/grpokit/grpokit/model"
)

// ModelGenerator is the Generator of a model: one KV-cache generation per
// turn over every active row.
type ModelGenerator struct {
	Model *model.Model
	// Config holds the sampling settings and stop ids; MaxNewTokens,
	// NumGenerations and Seed are set per call.
	Config model.GenerateConfig
}

// Generate implements Generator.
func (g ModelGenerator) Generate(ctx context.Context, seqs [][]int, n, maxNew int, seed uint64) ([]Turn, error) {
	cfg := g.Config
	cfg.MaxNewTokens, cfg.NumGenerations, cfg.Seed = maxNew, n, seed
	cfg.MinNewTokens = min(cfg.MinNewTokens, maxNew)
	out, err := g.Model.Generate(ctx, seqs, cfg)
	if err != nil {
		return nil, err
	}
	turns := make([]Turn, len(out))
	for i, c := range out {
		turns[i] = Turn{IDs: c.Tokens, Stopped: c.Stopped}
	}
	return turns, nil
}
