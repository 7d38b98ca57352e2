package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// hostileTemplates are chat templates a downloaded model folder could
// carry; each must stop with ErrRenderLimit under the default limits.
var hostileTemplates = []struct{ name, src string }{
	{"billion-iterations", `{% for i in range(1000000000) %}x{% endfor %}`},
	{"nested-loops", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`},
	{"loop-over-huge-list", `{% set l = range(900000)|list %}{% for i in l %}{% for j in l %}{% endfor %}{% endfor %}`},
	{"macro-recursion", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`},
	{"recursive-loop", `{% for x in [1] recursive %}{{ loop([1]) }}{% endfor %}`},
	{"mutual-recursion", `{% macro a(n) %}{{ b(n) }}{% endmacro %}{% macro b(n) %}{{ a(n) }}{% endmacro %}{{ a(1) }}`},
	{"10GB-string", `{{ 'a' * 10000000000 }}`},
	{"10GB-string, stray byte in the operator", "{{ 'a'\x15* 10000000000 }}"},
	{"string-times-string", `{% set s = 'a' * 1000000 %}{{ s * 1000000 }}`},
	{"doubling", `{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}`},
	{"tilde-doubling", `{% set ns = namespace(s='ab') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}`},
	{"shared-list-tojson", `{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l|tojson }}`},
	{"shared-list-print", `{% set ns = namespace(l=[1]) %}{% for i in range(60) %}{% set ns.l = [ns.l, ns.l] %}{% endfor %}{{ ns.l }}`},
	{"join-blowup", `{% set s = 'a' * 1000000 %}{{ [s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, s]|join(s) }}`},
	{"list-growth", `{% set ns = namespace(l=['a' * 1000000]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}`},
	{"replace-blowup", `{% set s = 'a' * 1000000 %}{{ s.replace('a', s, -1) }}`},
	{"replace-filter-blowup", `{% set s = 'a' * 1000000 %}{{ s|replace('a', s) }}`},
	{"center-filter", `{{ 'a'|center(10000000000) }}`},
	{"center-method", `{{ 'a'.center(10000000000) }}`},
	{"format-width", `{{ '{:>10000000000}'.format(1) }}`},
	{"indent-blowup", `{% set s = 'a\n' * 1000000 %}{{ s|indent(1000) }}`},
	{"output-flood", `{% for i in range(1000000) %}{{ 'a' * 1000 }}{% endfor %}`},
	{"literal-flood", `{% for i in range(999999) %}aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa{% endfor %}`},
	{"macro-output-flood", `{% macro f() %}{% for i in range(999999) %}{{ 'a' * 100 }}{% endfor %}{% endmacro %}{% set x = f() %}{{ x|length }}`},
}

// TestChatTemplateRenderLimits renders each hostile template and checks
// that it stops with a clear error in bounded time and memory. Before the
// limits these ran out of memory, overflowed the stack or never ended.
func TestChatTemplateRenderLimits(t *testing.T) {
	for _, tc := range hostileTemplates {
		t.Run(tc.name, func(t *testing.T) {
			ct, err := NewChatTemplate(tc.src)
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			out, err := ct.Render(nil)
			took := time.Since(start)
			var after runtime.MemStats
			runtime.ReadMemStats(&after)
			if !errors.Is(err, ErrRenderLimit) {
				t.Fatalf("got %d bytes, error %v; want ErrRenderLimit", len(out), err)
			}
			if grown := after.TotalAlloc - before.TotalAlloc; grown > 2<<30 {
				t.Errorf("allocated %d MiB", grown>>20)
			}
			t.Logf("%v in %v", err, took)
		})
	}
}

// TestChatTemplateLimitsFromFile checks that a render error names the file
// the template came from.
func TestChatTemplateLimitsFromFile(t *testing.T) {
	for _, file := range []string{"tokenizer_config.json", "chat_template.jinja"} {
		t.Run(file, func(t *testing.T) {
			dir := t.TempDir()
			data, err := NewByteBPE([]string{"the"}, ChatMLSpecials())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), data, 0o644); err != nil {
				t.Fatal(err)
			}
			src := `{% for i in range(1000000000) %}x{% endfor %}`
			if file == "tokenizer_config.json" {
				if err := os.WriteFile(filepath.Join(dir, file), []byte(`{"chat_template": "{% for i in range(1000000000) %}x{% endfor %}"}`), 0o644); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(filepath.Join(dir, file), []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			p, err := LoadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.ApplyChat([]Message{{Role: "user", Content: "hi"}}, ChatOptions{})
			want := "tokenizer: chat template in " + filepath.Join(dir, file)
			if !errors.Is(err, ErrRenderLimit) || !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("got %v, want an ErrRenderLimit starting %q", err, want)
			}
			t.Log(err)
		})
	}
}

// TestChatTemplateLimitSettings checks each limit against a template just
// under and just over it.
func TestChatTemplateLimitSettings(t *testing.T) {
	cases := []struct {
		name string
		lim  RenderLimits
		src  string
		ok   bool
		msg  string
	}{
		{"steps-under", RenderLimits{MaxSteps: 1000}, `{% for i in range(100) %}x{% endfor %}`, true, ""},
		{"steps-over", RenderLimits{MaxSteps: 1000}, `{% for i in range(2000) %}x{% endfor %}`, false, "more than 1000 steps"},
		{"output-under", RenderLimits{MaxOutputBytes: 100}, `{{ 'a' * 100 }}`, true, ""},
		{"output-over", RenderLimits{MaxOutputBytes: 100}, `{% for i in range(20) %}{{ 'a' * 10 }}{% endfor %}`, false, "output of more than 100 bytes"},
		{"value-over", RenderLimits{MaxOutputBytes: 100}, `{% set s = 'a' * 101 %}`, false, "a value of more than 100 bytes"},
		{"depth-under", RenderLimits{MaxDepth: 100}, `{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(5) }}x`, true, ""},
		{"depth-over", RenderLimits{MaxDepth: 100}, `{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(100) }}x`, false, "nested more than 100 deep"},
		{"timeout", RenderLimits{Timeout: time.Nanosecond}, `{% for i in range(10) %}x{% endfor %}`, false, "rendering took longer than 1ns"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ct, err := NewChatTemplate(tc.src)
			if err != nil {
				t.Fatal(err)
			}
			if ct, err = ct.WithLimits(tc.lim); err != nil {
				t.Fatal(err)
			}
			_, err = ct.Render(nil)
			if tc.ok {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			if !errors.Is(err, ErrRenderLimit) || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("got %v, want ErrRenderLimit with %q", err, tc.msg)
			}
		})
	}
}

// TestChatTemplateNoFiles checks that a template cannot read files.
func TestChatTemplateNoFiles(t *testing.T) {
	for _, src := range []string{`{% include "/etc/passwd" %}`, `{% import "/etc/passwd" as x %}`,
		`{% extends "/etc/passwd" %}`, `{% from "/etc/passwd" import x %}`} {
		if ct, err := NewChatTemplate(src); err == nil {
			out, err := ct.Render(nil)
			if err == nil {
				t.Errorf("%s rendered %q", src, out)
			}
		}
	}
}

// TestChatTemplateDeepSource checks that a deeply nested template is
// refused before the parser recurses.
func TestChatTemplateDeepSource(t *testing.T) {
	src := "{{ " + strings.Repeat("(", 2_000_000) + "1" + strings.Repeat(")", 2_000_000) + " }}"
	_, err := NewChatTemplate(src)
	if err == nil || !strings.Contains(err.Error(), "nested more than 1000 deep") {
		t.Fatalf("got %v", err)
	}
}
