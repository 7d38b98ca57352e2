package tokenizer

import (
	"errors"
	"strings"
	"testing"
)

func TestLoadErrors(t *testing.T) {
	good, err := NewByteBPE([]string{"hi"}, ChatMLSpecials())
	if err != nil {
		t.Fatal(err)
	}
	replace := func(old, new string) string {
		s := strings.Replace(string(good), old, new, 1)
		if s == string(good) {
			t.Fatalf("fixture edit %q not applied", old)
		}
		return s
	}
	cases := []struct {
		name, json, want string
		unsupported      bool
	}{
		{"malformed", `{"model": [}`, "tokenizer: parse tokenizer.json: invalid character '}' looking for beginning of value", false},
		{"truncated", string(good[:len(good)/2]), "tokenizer: parse tokenizer.json: unexpected end of JSON input", false},
		{"no model", `{"version": "1.0"}`, "tokenizer: tokenizer.json has no model", false},
		{"unigram", `{"model": {"type": "Unigram", "vocab": []}}`, `tokenizer: model: unsupported type "Unigram"`, true},
		{"normalizer", replace(`"normalizer": null`, `"normalizer": {"type": "BertNormalizer"}`), `tokenizer: normalizer: unsupported type "BertNormalizer"`, true},
		{"pre-tokenizer", replace(`"type": "Split"`, `"type": "Punctuation"`), `tokenizer: pre_tokenizer Sequence[0]: pre_tokenizer: unsupported type "Punctuation"`, true},
		{"decoder", replace(`"decoder": {`, `"decoder": {"type": "CTC"}, "old_decoder": {`), `tokenizer: decoder: unsupported type "CTC"`, true},
		{"bad regex", replace(`"Regex": "(?i:`, `"Regex": "((?i:`), "tokenizer: pre_tokenizer Sequence[0]: pre_tokenizer Split: regex", false},
		{"merge not in vocab", replace(`"merges": [`, `"merges": [["zz", "qq"],`), `tokenizer: model BPE: merge 0 ("zz" "qq"): token not in vocab`, false},
		{"unk missing", replace(`"unk_token": null`, `"unk_token": "<unk>"`), `tokenizer: model BPE: unk_token "<unk>" is not in the vocab`, false},
		{"empty added", replace(`"content": "<|endoftext|>"`, `"content": ""`), "tokenizer: added_tokens[0]: empty content", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := FromJSON([]byte(c.json))
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error %q\n want prefix %q", err, c.want)
			}
			if errors.Is(err, ErrUnsupported) != c.unsupported {
				t.Errorf("errors.Is(err, ErrUnsupported) = %v", !c.unsupported)
			}
		})
	}
}

func TestTemplateErrors(t *testing.T) {
	cases := []struct{ name, tpl, want string }{
		{"raise", `{{ raise_exception("Conversation roles must alternate") }}`, "tokenizer: chat template: template raised an exception: Conversation roles must alternate"},
		{"parse", `{% for m in messages %}`, "tokenizer: chat template: parse:"},
		{"unknown filter", `{{ messages | nosuchfilter }}`, "tokenizer: chat template:"},
		{"bad tojson arg", `{{ messages | tojson(indent="x") }}`, "tokenizer: chat template: render:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct, err := NewChatTemplate(c.tpl)
			if err == nil {
				_, err = ct.Apply([]Message{{Role: "user", Content: "x"}}, ChatOptions{})
			}
			if err == nil {
				t.Fatal("want an error")
			}
			if !strings.HasPrefix(err.Error(), c.want) {
				t.Errorf("error %q\n want prefix %q", err, c.want)
			}
			if c.name == "raise" && !errors.Is(err, ErrTemplateRaised) {
				t.Error("want errors.Is(err, ErrTemplateRaised)")
			}
		})
	}
}

func TestGemmaTemplateRaises(t *testing.T) {
	src := `{%- for message in messages -%}{%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}{{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}{%- endif -%}{{ message['content'] }}{%- endfor -%}`
	ct, err := NewChatTemplate(src)
	if err != nil {
		t.Fatal(err)
	}
	_, err = ct.Apply([]Message{{Role: "user", Content: "a"}, {Role: "user", Content: "b"}}, ChatOptions{})
	if !errors.Is(err, ErrTemplateRaised) || !strings.Contains(err.Error(), "roles must alternate") {
		t.Errorf("got %v", err)
	}
}

func TestInvalidUTF8IsLossy(t *testing.T) {
	// Rust's from_utf8_lossy: one U+FFFD per maximal ill-formed subpart.
	cases := map[string]string{
		"a\xffb":       "a\uFFFDb",
		"\xff\xfe":     "\uFFFD\uFFFD",
		"\xe2\x82":     "\uFFFD",             // truncated 3-byte sequence
		"\xe2\x82x":    "\uFFFDx",            // truncated, then ASCII
		"\xed\xa0\x80": "\uFFFD\uFFFD\uFFFD", // surrogate: ED then A0 is outside 80..9F
		"\xf0\x9f\x98": "\uFFFD",
		"ok \xc3\xa9":  "ok é",
		"\xc0\xaf":     "\uFFFD\uFFFD",
	}
	for in, want := range cases {
		if got := lossyUTF8(in); got != want {
			t.Errorf("lossyUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}
