package exkit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/grpokit/grpokit/checkpoint"
)

// Train runs one example's GRPO training, train being the trainer's Train
// or TrainEnv, unless c.Steps is 0; c.TimeLimit, when set, stops it early
// (the trainer saves a checkpoint). Then it draws the plots and says how
// training ended. It returns how long training took, and stop = true when
// ctx was cancelled (SIGINT or SIGTERM): the run is over, with its checkpoint and
// metrics saved, and the caller returns nil without the final evaluation.
// A training error other than those comes back as err.
func Train(ctx context.Context, name string, c *Config, out io.Writer, step func() int,
	train func(context.Context) error, plot func() error) (took time.Duration, stop bool, err error) {
	if c.Steps == 0 {
		return 0, false, nil
	}
	start := time.Now()
	trainCtx, cancel := ctx, context.CancelFunc(func() {})
	if c.TimeLimit > 0 {
		trainCtx, cancel = context.WithTimeout(ctx, time.Duration(c.TimeLimit))
	}
	err = train(trainCtx)
	cancel()
	if errors.Is(err, checkpoint.ErrOutputDirInUse) {
		return 0, false, inUse(name, err)
	}
	took = time.Since(start)
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		fmt.Fprintf(out, "\n%s: time limit %s reached after %d steps; checkpoint saved\n", name, time.Duration(c.TimeLimit), step())
		err = nil
	}
	if perr := plot(); perr != nil {
		fmt.Fprintf(out, "%s: plot: %v\n", name, perr)
	}
	if err != nil && ctx.Err() != nil {
		fmt.Fprintf(out, "\n%s: interrupted after %d steps (%s); checkpoint and metrics are in %s\n",
			name, step(), took.Round(time.Second), c.Out)
		return took, true, nil
	}
	return took, false, err
}

// inUse says grpo's OutputDirInUseError in the example's flags, and adds
// the example's name to any other error.
func inUse(name string, err error) error {
	var e *checkpoint.OutputDirInUseError
	if !errors.As(err, &e) {
		return fmt.Errorf("%s: %w", name, err)
	}
	return fmt.Errorf("%s: -out %s holds another run (%s): continue it with -resume, replace it with -overwrite, or choose another -out: %w",
		name, e.Dir, e.Found, checkpoint.ErrOutputDirInUse)
}

// Duration is a time.Duration that reads and writes Go duration strings
// ("25m") in flags and JSON.
type Duration time.Duration

// String returns the duration as Go writes it ("25m0s").
func (d *Duration) String() string { return time.Duration(*d).String() }

// Set parses a Go duration string (flag.Value).
func (d *Duration) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration such as 25m", s)
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads a Go duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return errors.New("time_limit: want a duration string such as \"25m\"")
	}
	return d.Set(s)
}
