package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// Call is one tool call parsed from the model's text. A call the parser
// could not read (bad JSON, no name, an unclosed tag) has Err set; it is
// still a call, answered with a tool error and counted as a failure.
type Call struct {
	// Name is the tool the model asked for ("" when unreadable).
	Name string
	// Arguments are the call's arguments as the model wrote them: a JSON
	// object, a JSON string, or nil.
	Arguments json.RawMessage
	// Raw is the text of the call as generated.
	Raw string
	// Err says why the call could not be read; nil for a well-formed call.
	Err error
}

// Result is the outcome of one call, in the order of the calls.
type Result struct {
	// Name is the tool called (the call's name; "" for an unreadable call).
	Name string
	// Content is what the model reads: the tool's output, or for a failed
	// call {"error": "..."}.
	Content string
	// Err is the failure (nil on success): an unreadable call, an unknown
	// tool, arguments that do not fit the schema, the tool's own error, a
	// panic or a timeout.
	Err error
}

// Failure kinds of a tool call; Result.Err wraps one of them.
var (
	ErrMalformedCall = errors.New("malformed tool call")
	ErrToolPanicked  = errors.New("tool panicked")
	ErrToolTimedOut  = errors.New("tool timed out")
)

// Toolset is the tools one rollout may call, by name.
type Toolset struct {
	byName map[string]*Tool
	order  []*Tool
}

// NewToolset collects tools; two tools with one name are an error.
func NewToolset(tools ...*Tool) (*Toolset, error) {
	ts := &Toolset{byName: map[string]*Tool{}}
	for _, t := range tools {
		if t == nil {
			return nil, errors.New("agent: nil tool")
		}
		if _, dup := ts.byName[t.name]; dup {
			return nil, fmt.Errorf("agent: two tools named %q", t.name)
		}
		ts.byName[t.name] = t
		ts.order = append(ts.order, t)
	}
	return ts, nil
}

// Tools returns the tools in the order given.
func (ts *Toolset) Tools() []*Tool { return append([]*Tool(nil), ts.order...) }

// Names returns the tool names, sorted.
func (ts *Toolset) Names() []string {
	out := make([]string, 0, len(ts.order))
	for _, t := range ts.order {
		out = append(out, t.name)
	}
	sort.Strings(out)
	return out
}

// Specs returns each tool's Spec, for a chat template's tools variable.
func (ts *Toolset) Specs() []any {
	out := make([]any, len(ts.order))
	for i, t := range ts.order {
		out[i] = t.Spec()
	}
	return out
}

// Lookup returns the tool named name.
func (ts *Toolset) Lookup(name string) (*Tool, bool) {
	t, ok := ts.byName[name]
	return t, ok
}

// DefaultToolTimeout bounds one tool call when Executor.Timeout is 0.
const DefaultToolTimeout = 10 * time.Second

// Executor runs tool calls safely: each in its own goroutine with a
// timeout, a panic or an error turned into a failed Result, never a crash.
// The zero value is ready to use.
type Executor struct {
	// Timeout bounds each call; 0 means DefaultToolTimeout. A call that
	// overruns keeps running in the background (its context is cancelled,
	// so a tool that watches it stops); its Result is a timeout.
	Timeout time.Duration
	// Parallel bounds the calls running at once; 0 means 64.
	Parallel int
}

// Job is one call to run with the tools of its rollout.
type Job struct {
	Tools *Toolset
	Call  Call
}

// Run runs the jobs concurrently and returns their results in job order.
func (e Executor) Run(ctx context.Context, jobs []Job) []Result {
	out := make([]Result, len(jobs))
	par := e.Parallel
	if par <= 0 {
		par = 64
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, j := range jobs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i] = e.run(ctx, j.Tools, j.Call)
		}()
	}
	wg.Wait()
	return out
}

// RunCall runs one call with the tools of ts.
func (e Executor) RunCall(ctx context.Context, ts *Toolset, c Call) Result {
	return e.run(ctx, ts, c)
}

func (e Executor) run(ctx context.Context, ts *Toolset, c Call) Result {
	fail := func(err error) Result {
		return Result{Name: c.Name, Content: errorContent(err), Err: err}
	}
	if c.Err != nil {
		return fail(fmt.Errorf("%w: %v", ErrMalformedCall, c.Err))
	}
	var tool *Tool
	if ts != nil {
		tool = ts.byName[c.Name]
	}
	if tool == nil {
		var names []string
		if ts != nil {
			names = ts.Names()
		}
		return fail(fmt.Errorf("%w %q (available: %s)", ErrUnknownTool, c.Name, joinOr(names)))
	}
	args, err := tool.normalizeArgs(c.Arguments)
	if err != nil {
		return fail(err)
	}
	timeout := e.Timeout
	if timeout <= 0 {
		timeout = DefaultToolTimeout
	}
	type outcome struct {
		s   string
		err error
	}
	done := make(chan outcome, 1) // buffered: an abandoned call never blocks
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{err: fmt.Errorf("%w: %v", ErrToolPanicked, r)}
			}
		}()
		s, err := tool.call(callCtx, args)
		done <- outcome{s, err}
	}()
	select {
	case o := <-done:
		if o.err != nil {
			return fail(o.err)
		}
		return Result{Name: c.Name, Content: o.s}
	case <-callCtx.Done():
		return fail(fmt.Errorf("%w after %s", ErrToolTimedOut, timeout))
	}
}

// errorContent is what the model reads for a failed call.
func errorContent(err error) string {
	b, _ := json.Marshal(map[string]string{"error": err.Error()})
	return string(b)
}

func joinOr(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += n
	}
	return s
}
