// Package tokenizer implements Hugging Face tokenizers and chat templates in
// pure Go (no cgo), exactly as the Rust tokenizers library and transformers
// do for the models grpokit trains (Qwen, Llama 3, Gemma 3, SmolLM2).
//
// It owns text <-> ids: reading tokenizer.json (BPE with byte-level or
// byte-fallback alphabets, WordLevel; added and special tokens; the
// normalizers NFC/NFD/NFKC/NFKD, Lowercase, Replace, Prepend, Strip,
// Sequence; the pre-tokenizers Split, ByteLevel, Digits, Metaspace,
// Whitespace, Sequence; the TemplateProcessing post-processor; the decoders
// ByteLevel, ByteFallback, Metaspace, Fuse, Strip, Replace, Sequence),
// reading a model folder's tokenizer_config.json and generation_config.json
// for BOS/EOS/PAD ids, and rendering chat templates. Model weights belong to
// package model; this package imports nothing else from grpokit.
//
//	p, err := tokenizer.LoadDir("path/to/Qwen3-0.6B")
//	if err != nil { ... }
//	prompt, err := p.ApplyChat([]tokenizer.Message{{Role: "user", Content: "2+2?"}},
//		tokenizer.ChatOptions{AddGenerationPrompt: true, Vars: map[string]any{"enable_thinking": false}})
//	ids := p.Tokenizer.Encode(prompt, false) // the template already holds the specials
//	text := p.Tokenizer.Decode(ids, true)
//	stop := p.IsEOS(ids[len(ids)-1])
//
// Errors: loading returns errors that name the file, field and problem;
// unsupported component types wrap ErrUnsupported and name the type. Encode
// and Decode never fail. Invalid UTF-8 given to Encode is replaced with
// U+FFFD the way Rust's String::from_utf8_lossy does (one replacement per
// maximal ill-formed subsequence), because the Rust library only ever sees
// Rust Strings. A template that calls raise_exception returns an error
// wrapping ErrTemplateRaised; templates never panic across the API.
//
// Chat templates run on github.com/nikolalohinski/gonja/v2 with the
// transformers environment (trim_blocks, lstrip_blocks) plus what gonja
// lacks: tojson with Python's separators and insertion key order,
// raise_exception, strftime_now, and "A if C else B" inside parentheses.
// Key order comes from the JSON that feeds the template: use RenderJSON, or
// json.RawMessage/structs in Message.Extra and ChatOptions.Tools.
//
// A chat template comes with a downloaded model folder and is a program:
// every render runs under RenderLimits (loop steps, the size of the text
// and of every value built on the way, macro depth, wall time), and one
// that reaches a limit stops with an error wrapping ErrRenderLimit and
// naming the file the template came from. include, import, from and
// extends are not available, as in transformers.
//
// All exported values are safe for concurrent use after loading.
//
// References: Hugging Face tokenizers 0.22.2 (Rust) for ids, @huggingface/jinja
// 0.5.11 for templates; the fixtures in ../shared/tokenizers come from them.
// An optional backend on the Rust library itself (github.com/daulet/tokenizers)
// is built with the tag tokenizers_rust; see rust.go.
package tokenizer
