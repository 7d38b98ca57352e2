package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/grpokit/grpokit/agent"
	"github.com/grpokit/grpokit/tokenizer"
)

func TestRunSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("trains a tiny model for 2 steps")
	}
	var out bytes.Buffer
	cfg := defaults()
	cfg.Steps, cfg.SFTSteps, cfg.Demos, cfg.Prompts, cfg.Generations, cfg.Eval = 2, 4, 8, 1, 2, 4
	cfg.Out, cfg.Quiet, cfg.Stdout = t.TempDir(), true, &out
	if err := run(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"warm start: 4 supervised steps on 8 demonstrations", "before GRPO", "after 2 GRPO steps", "tool-call rate"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	for _, f := range []string{"metrics.jsonl", "reward.png", "eval.jsonl"} {
		if _, err := os.Stat(filepath.Join(cfg.Out, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestCorrect(t *testing.T) {
	for _, tc := range []struct {
		final, answer string
		want          bool
	}{{"5535", "5535", true}, {" 5535.", "5535", true}, {"5536", "5535", false}, {"", "5535", false}, {"<call>calculator 1*2</call>", "2", false}} {
		if got := correct(tc.final, tc.answer); got != tc.want {
			t.Errorf("correct(%q, %q) = %v", tc.final, tc.answer, got)
		}
	}
}

// TestGradientCheckpointingDefault: the example takes TRL's default
// (gradient_checkpointing on) and -gradient-checkpointing=false turns it
// off, in the trainer config it builds.
func TestGradientCheckpointingDefault(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want bool
	}{
		{nil, true},
		{[]string{"-gradient-checkpointing=false"}, false},
		{[]string{"-gradient-checkpointing"}, true},
	} {
		cfg := defaults()
		if err := parse(&cfg, tc.args); err != nil {
			t.Fatal(err)
		}
		if got := cfg.GRPO(5).GradientCheckpointing; got != tc.want {
			t.Errorf("%q: gradient_checkpointing %v, want %v", tc.args, got, tc.want)
		}
	}
}

// TestCallText: the warm start's call in each format is read back by the
// format's own parser as one calculator call of the expression.
func TestCallText(t *testing.T) {
	for _, f := range []agent.Format{agent.Plain{}, agent.Hermes{}, agent.Llama3{}, agent.Gemma{}} {
		text, err := callText(f, "582*32")
		if err != nil {
			t.Fatal(err)
		}
		_, calls := f.Parse(text)
		if len(calls) != 1 || calls[0].Err != nil || calls[0].Name != "calculator" {
			t.Fatalf("%s: %q parses to %+v", f.Name(), text, calls)
		}
		var args agent.CalculatorArgs
		if f.Name() == "plain" {
			var s string
			if err := json.Unmarshal(calls[0].Arguments, &s); err != nil || s != "582*32" {
				t.Errorf("%s: arguments %s", f.Name(), calls[0].Arguments)
			}
			continue
		}
		if err := json.Unmarshal(calls[0].Arguments, &args); err != nil || args.Expression != "582*32" {
			t.Errorf("%s: arguments %s", f.Name(), calls[0].Arguments)
		}
	}
}

// TestChatMLToolsTemplate: examples/configs/chatml-tools.jinja, the tool
// template for ChatML models whose own template has none (SmolLM2), is
// read as the Hermes format, and a warm-start demonstration rendered
// through it is the template's own rendering of the whole conversation.
func TestChatMLToolsTemplate(t *testing.T) {
	tpl, err := os.ReadFile(filepath.Join("..", "configs", "chatml-tools.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := tokenizer.WriteTinyDir(dir, nil); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "tokenizer_config.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var tc map[string]any
	if err := json.Unmarshal(b, &tc); err != nil {
		t.Fatal(err)
	}
	tc["chat_template"] = string(tpl)
	if b, err = json.Marshal(tc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := agent.NewRenderer(tok, agent.RendererOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Format().Name() != "hermes" {
		t.Fatalf("format %q, want hermes", r.Format().Name())
	}
	p := problem{582, 32}
	d, err := p.demonstration(true, false, r.Format())
	if err != nil {
		t.Fatal(err)
	}
	tools := []*agent.Tool{agent.Calculator()}
	traj, err := r.Demonstration(d, tools)
	if err != nil {
		t.Fatal(err)
	}
	msgs := append(slices.Clone(d.Prompt.Messages), traj.Messages...)
	full, err := tok.ApplyChat(msgs, tokenizer.ChatOptions{Tools: []any{tools[0].Spec()}})
	if err != nil {
		t.Fatal(err)
	}
	got := tok.Tokenizer.Decode(slices.Concat(traj.PromptIDs, traj.IDs), false) + "\n"
	if got != full {
		t.Errorf("demonstration\n%s\ntemplate\n%s", got, full)
	}
	if !strings.Contains(full, "<tool_response>\n18624\n</tool_response>") || !strings.Contains(full, `"expression": "582*32"`) {
		t.Errorf("rendering lacks the call or the result:\n%s", full)
	}
}
