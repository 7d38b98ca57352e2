package tokenizer_test

import (
	"fmt"
	"os"

	"github.com/grpokit/grpokit/tokenizer"
)

func ExampleChatTemplate() {
	tpl, err := tokenizer.NewChatTemplate(
		`{% for m in messages %}<{{ m.role }}>{{ m.content | trim }}{% if not loop.last %} {% endif %}{% endfor %}` +
			`{% if tools %} tools={{ tools | tojson }}{% endif %}{% if add_generation_prompt %} <assistant>{% endif %}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := tpl.Apply([]tokenizer.Message{{Role: "user", Content: " What is 2+2? "}}, tokenizer.ChatOptions{
		AddGenerationPrompt: true,
		Tools:               []any{struct{ Name, Description string }{"add", "Add two ints"}},
	})
	fmt.Println(out, err)
	// Output: <user>What is 2+2? tools=[{"Name": "add", "Description": "Add two ints"}] <assistant> <nil>
}

func ExampleWriteTinyDir() {
	dir, _ := os.MkdirTemp("", "tiny")
	defer os.RemoveAll(dir)
	if err := tokenizer.WriteTinyDir(dir, []string{"hello", "world"}); err != nil {
		fmt.Println(err)
		return
	}
	p, err := tokenizer.LoadDir(dir)
	if err != nil {
		fmt.Println(err)
		return
	}
	prompt, _ := p.ApplyChat([]tokenizer.Message{{Role: "user", Content: "hello world"}}, tokenizer.ChatOptions{AddGenerationPrompt: true})
	// Ids: bytes 0-255, Ġhello 256-260, Ġworld 261-265, hello 266-269,
	// world 270-273, then <|endoftext|> 274, <|im_start|> 275, <|im_end|> 276.
	ids := p.Tokenizer.Encode(prompt, false)
	fmt.Printf("%q\n%v\nEOS %v PAD %d\n", prompt, ids, p.EOS, p.PAD)
	fmt.Printf("%q\n", p.Tokenizer.Decode(ids, true))
	// Output:
	// "<|im_start|>user\nhello world<|im_end|>\n<|im_start|>assistant\n"
	// [275 117 115 101 114 10 269 265 276 10 275 97 115 115 105 115 116 97 110 116 10]
	// EOS [276] PAD 274
	// "user\nhello world\nassistant\n"
}
