// Package reward defines how grpokit scores completions: the Func type with
// its fixed signature, the richer Scorer interface, combinators, built-in
// rewards and an Evaluator that runs user code safely.
//
// A reward is a plain Go function:
//
//	type Func func(prompt, completion, answer string) float64
//
// Rewards that need more context (the turn of a multi-turn game, metadata
// from the dataset) implement Scorer, which takes a Sample. Every Func is a
// Scorer through its Score method, the way http.HandlerFunc is a Handler, so
// the trainer only ever deals with Scorers. Combinators (Scale, Sum,
// Weighted) wrap and return rewards like http middleware.
//
// # Usage
//
//	format := reward.MustRegex(`(?s)^<think>.*</think>`)
//	ev := &reward.Evaluator{Rewards: []reward.Named{
//		{Name: "format", Weight: 0.5, Scorer: format},
//		{Name: "correct", Weight: 1, Scorer: reward.NumericMatch(1e-6)},
//	}}
//	res, err := ev.Evaluate(ctx, samples)
//	// res.Totals[i] is the advantage input for sample i;
//	// res.Stats[r] holds the mean, std and failure counts of reward r.
//
// # Safety
//
// Rewards are user code. Evaluator calls each one in its own goroutine
// under a bounded worker pool, recovers a panic, replaces NaN, ±Inf and
// scores beyond ±MaxScore (which would overflow a sum) by 0, and gives up
// on a call after a timeout (that result is 0; the step does not wait for
// it). Go cannot stop a goroutine: an abandoned call of a plain Func keeps
// running until it returns, while a ContextScorer sees its context
// cancelled and can stop. While Evaluator.MaxStray calls of a reward are
// still running past their timeout, the reward is not called again (those
// samples score 0, counted as Skipped), so a reward that hangs or spins
// holds a bounded number of goroutines; ContextScorer says what a reward
// must do.
// Each kind of failure is counted per reward so the trainer can log it, as
// net/http contains a panic to its own request. Safe wraps a single Func
// the same way, without counting.
//
// # Concurrency
//
// Rewards passed to an Evaluator must be safe for concurrent use: the
// Evaluator calls them from several goroutines at once. All values in this
// package are immutable after construction and safe for concurrent use.
// An Evaluator may be shared once its fields are set.
//
// # References
//
// The built-in GSM8K-style shapes (format regex, XML tag count) follow the
// widely used GRPO GSM8K seed (willccbb's grpo_demo.py); the logged
// statistics follow TRL's GRPOTrainer (rewards/<name>/mean and /std, where
// std is the sample standard deviation).
package reward
