package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/grpokit/grpokit/dataset"
)

// chatCmd is "grpokit chat": a conversation on the terminal, with the
// chat template applied to the whole history each turn.
func chatCmd(ctx context.Context, args []string, out io.Writer) error {
	return chat(ctx, args, os.Stdin, out)
}

func chat(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	var s sampling
	s.register(fs)
	system := fs.String("system", "", "system prompt")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	l, err := s.load()
	if err != nil {
		return err
	}
	p, err := l.policy(true)
	if err != nil {
		return err
	}
	var history []dataset.Message
	if *system != "" {
		history = append(history, dataset.Message{Role: "system", Content: *system})
	}
	fmt.Fprintln(out, "grpokit chat: type a message; an empty line or Ctrl-D ends")
	sc := bufio.NewScanner(in)
	for {
		fmt.Fprint(out, "> ")
		if !sc.Scan() || strings.TrimSpace(sc.Text()) == "" {
			fmt.Fprintln(out)
			return sc.Err()
		}
		text := sc.Text()
		ex, opts := s.example(l, history, text), s.options()
		if err := fitContext(p, l, ex, &opts, logOut); err != nil {
			return err
		}
		comps, err := p.Generate(ctx, []dataset.Example{ex}, 1, opts)
		if err != nil {
			return err
		}
		reply := comps[0].Text
		fmt.Fprintln(out, reply)
		history = append(history, dataset.Message{Role: "user", Content: text}, dataset.Message{Role: "assistant", Content: reply})
		s.seed++
	}
}
