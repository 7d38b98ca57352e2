package gsm8k

// SystemPrompt is the seed's system prompt, verbatim (it starts and ends
// with a newline).
const SystemPrompt = `
Respond in the following format:
<reasoning>
...
</reasoning>
<answer>
...
</answer>
`

// Message is one chat turn, for a tokenizer's chat template.
type Message struct {
	Role    string // "system" or "user"
	Content string
}

// Chat returns the seed's prompt for question: the system prompt, then the
// question as the user's turn.
func Chat(question string) []Message {
	return []Message{{Role: "system", Content: SystemPrompt}, {Role: "user", Content: question}}
}

// Prompt returns a plain-text prompt for models without a chat template:
// the system prompt's instruction, then "Question: " and the question.
func Prompt(question string) string {
	return SystemPrompt[1:] + "\nQuestion: " + question + "\n"
}
