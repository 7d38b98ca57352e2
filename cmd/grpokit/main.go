// Command grpokit trains, runs, merges and evaluates language models with
// GRPO from a config file, for people who would rather not write Go:
//
//	go install ./cmd/grpokit    # from a clone (the module is not yet published at its path)
//	grpokit train -config run.yaml          # GRPO (TRL's GRPOConfig names)
//	grpokit generate -model runs/x/final -prompt "2+2="
//	grpokit chat -model DIR [-adapter DIR]
//	grpokit eval -config run.yaml -model runs/x/final
//	grpokit merge -model BASE -adapter runs/x/final -out merged
//	grpokit export -model BASE -adapter runs/x/final -format gguf -out model.gguf
//	grpokit plot runs/x/metrics.jsonl
//
// Run a subcommand with -h for its flags. train's config file is YAML or
// JSON: the training settings with TRL's names at the top level
// (max_steps, learning_rate, num_generations, per_device_train_batch_size,
// beta, ...; see grpo.Config), and the sections model, dataset, rewards,
// constraint, sft and eval (see examples/configs/). An unknown key is an
// error naming the nearest known one. Ctrl-C (SIGINT) and SIGTERM (docker
// stop, Kubernetes, Slurm, timeout) stop training after saving the last
// completed step, and the command then exits with status 130 (SIGINT) or
// 143 (SIGTERM); "resume: true" (or -resume) continues from the newest
// checkpoint.
// Nothing a command finds in place is overwritten without being asked:
// train refuses an output_dir holding another run (-resume, or
// overwrite_output_dir: true), merge an -out holding files (-overwrite),
// export an existing -out file or Modelfile (-overwrite), and merge never
// writes into its inputs' folders.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/grpokit/grpokit/internal/clilog"
	"github.com/grpokit/grpokit/internal/interrupt"
)

// logOut is where the command's logger writes the library's warnings and
// notes: os.Stderr (tests set it).
var logOut io.Writer = os.Stderr

// newLogger returns the command's logger: one "grpokit: warning: ..."
// line per warning (and "grpokit: ..." per note) with its values as
// key=value, on logOut.
func newLogger() *slog.Logger { return clilog.New(logOut, "grpokit", slog.LevelInfo) }

// commands maps each subcommand to its function; each lives in its own file.
var commands = map[string]func(ctx context.Context, args []string, out io.Writer) error{
	"train":    trainCmd,
	"generate": generateCmd,
	"chat":     chatCmd,
	"eval":     evalCmd,
	"merge":    mergeCmd,
	"export":   exportCmd,
	"import":   importCmd,
	"plan":     planCmd,
	"plot":     plotCmd,
}

const usage = `grpokit: GRPO fine-tuning of small language models

usage:
  grpokit train -config run.yaml [-resume] [-max-steps N] [-out DIR]
  grpokit plan -config run.yaml      (the memory plan, without loading the weights)
  grpokit generate -model DIR|FILE.gguf [-adapter DIR] -prompt TEXT [sampling flags]
  grpokit chat -model DIR|FILE.gguf [-adapter DIR] [sampling flags]
  grpokit eval -config run.yaml [-model DIR] [-adapter DIR] [-n N]
  grpokit merge -model BASE -adapter DIR -out DIR [-overwrite]
  grpokit export -model DIR [-adapter DIR] -format gguf -out FILE [-dtype Q8_0]
  grpokit import -gguf FILE | -ollama NAME[:TAG] -out DIR [-dtype BF16]
  grpokit plot [-window N] [-out DIR] metrics.jsonl

Run "grpokit COMMAND -h" for a command's flags.
`

// main runs the command under a context that SIGINT and SIGTERM cancel: a
// training run stops after saving its last completed step. A run a signal
// stopped exits with 128 + the signal's number (130 for Ctrl-C, 143 for
// SIGTERM), as a shell reports a process the signal ended, so that
// "grpokit train && deploy" deploys nothing.
func main() {
	// Libraries called without a logger of their own log through
	// slog.Default(): give it the command's lines.
	slog.SetDefault(newLogger())
	ctx, stop := interrupt.Context(context.Background())
	err := run(ctx, os.Args[1:], os.Stdout)
	sig, caught := interrupt.Caught(ctx)
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintln(os.Stderr, err)
	}
	switch {
	case caught:
		os.Exit(sig.ExitCode())
	case err != nil:
		os.Exit(exitCode(err))
	}
}

// usageError marks a bad command line (exit status 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func exitCode(err error) int {
	var u usageError
	if errors.As(err, &u) {
		return 2
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	return 1
}

// run dispatches args[0] to its subcommand.
func run(ctx context.Context, args []string, out io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(out, usage)
		if len(args) == 0 {
			return usageError{errors.New("grpokit: no command")}
		}
		return nil
	}
	cmd, ok := commands[args[0]]
	if !ok {
		return usageError{fmt.Errorf("grpokit: unknown command %q (want train, generate, chat, eval, merge, export, import, plan or plot)", args[0])}
	}
	return cmd(ctx, args[1:], out)
}

// flagSet reports whether the command line set the flag name.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// parseFlags parses a subcommand's flags; a bad flag is a usage error.
func parseFlags(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(os.Stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{fmt.Errorf("grpokit %s: %w", fs.Name(), err)}
	}
	return nil
}
