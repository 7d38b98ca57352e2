package tokenizer
