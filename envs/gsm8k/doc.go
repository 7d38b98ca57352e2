// Package gsm8k is the grade-school math task of the well-known GRPO GSM8K
// seed (willccbb's grpo_demo.py): load the OpenAI GSM8K jsonl files, prompt
// the policy to answer in <reasoning>…</reasoning><answer>…</answer>
// format, score completions with the seed's five rewards, and evaluate
// accuracy with a strict and a lenient answer extraction.
//
// Usage:
//
//	exs, err := gsm8k.Train() // the shipped copy; gsm8k.Load(path) reads a file
//	msgs := gsm8k.Chat(exs[0].Question) // system + user, for a chat template
//	ev := &reward.Evaluator{Rewards: gsm8k.Rewards()}
//	rep, err := gsm8k.Evaluate(exs[:100], completions)
//	fmt.Print(rep)
//
// The rewards keep the seed's names and values (correctness 2.0, int 0.5,
// strict and soft format 0.5, xmlcount up to 0.5) with three documented
// changes: the format regexes let the reasoning span several lines and
// allow nothing but white space after </answer>, and an integer answer may
// be negative (GSM8K has a few negative answers).
//
// Everything here is safe for concurrent use. The package does not import
// grpo or model.
package gsm8k
