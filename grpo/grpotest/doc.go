// Package grpotest helps test code built on package grpo, in the manner of
// httptest and slogtest: Policy is a fake grpo.Policy (a bigram model over a
// few words, or scripted completions) that trains in milliseconds, and
// TestEnv checks an Env implementation against the grpo.Env contract,
// reporting every violation at once.
package grpotest
