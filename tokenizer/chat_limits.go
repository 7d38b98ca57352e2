package tokenizer

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// ErrRenderLimit is wrapped by the error of a render stopped by one of its
// RenderLimits.
var ErrRenderLimit = errors.New("chat template render limit reached")

// RenderLimits bound the work of one render of a chat template, which comes
// from a downloaded file and may loop, recurse or build strings without end.
// A zero field takes its default. A render that reaches a limit stops and
// returns an error wrapping ErrRenderLimit.
type RenderLimits struct {
	// MaxSteps bounds loop iterations, macro calls and guarded operations
	// (default 200,000).
	MaxSteps int
	// MaxOutputBytes bounds the rendered text and every string or list a
	// render builds on the way (default 16 MiB); the bytes all operations
	// of one render produce together are bounded by 16 times this.
	MaxOutputBytes int
	// MaxDepth bounds nested macro calls (default 200; Python's recursion
	// limit stops transformers' renderer at a similar depth).
	MaxDepth int
	// Timeout bounds the wall time of one render (default 10 s).
	Timeout time.Duration
}

// DefaultRenderLimits returns the limits a ChatTemplate has unless
// WithLimits sets others.
func DefaultRenderLimits() RenderLimits {
	return RenderLimits{MaxSteps: 200_000, MaxOutputBytes: 16 << 20, MaxDepth: 200, Timeout: 10 * time.Second}
}

func (l RenderLimits) withDefaults() RenderLimits {
	d := DefaultRenderLimits()
	if l.MaxSteps <= 0 {
		l.MaxSteps = d.MaxSteps
	}
	if l.MaxOutputBytes <= 0 {
		l.MaxOutputBytes = d.MaxOutputBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.Timeout <= 0 {
		l.Timeout = d.Timeout
	}
	return l
}

// maxNesting bounds the bracket nesting of a template's source, so that
// the parser's recursion stays far from Go's stack limit.
const maxNesting = 1000

// checkNesting rejects sources nested deeper than maxNesting.
func checkNesting(src string) error {
	depth, line := 0, 1
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\n':
			line++
		case '(', '[', '{':
			depth++
			if depth > maxNesting {
				return fmt.Errorf("brackets nested more than %d deep at line %d", maxNesting, line)
			}
		case ')', ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return nil
}

// stateKey names the per-render limits in the template context; a template
// cannot spell it.
const stateKey = "\x00grpokit-render-limits"

// Names of the guard filters and node the instrumented tree calls; no
// template can spell them.
const (
	guardLeft   = "render-limit/left-operand"
	guardRight  = "render-limit/right-operand"
	guardIter   = "render-limit/loop"
	guardOutput = "render-limit/output"
	tickName    = "render-limit/block"
)

// renderState is the budget of one render.
type renderState struct {
	lim      RenderLimits
	deadline time.Time
	steps    int
	produced int   // bytes produced by all guarded operations
	depth    int   // macro calls under way
	operands []int // sizes of pending left operands
	err      error // sticky: the first limit reached
}

func newRenderState(lim RenderLimits) *renderState {
	return &renderState{lim: lim, deadline: time.Now().Add(lim.Timeout)}
}

func (s *renderState) fail(format string, args ...any) error {
	if s.err == nil {
		s.err = fmt.Errorf("%w: "+format, append([]any{ErrRenderLimit}, args...)...)
	}
	return s.err
}

// step counts n steps and checks the step and time limits.
func (s *renderState) step(n int) error {
	if s.err != nil {
		return s.err
	}
	s.steps += n
	if s.steps > s.lim.MaxSteps {
		return s.fail("more than %d steps (loop iterations, macro calls and operations)", s.lim.MaxSteps)
	}
	if time.Now().After(s.deadline) {
		return s.fail("rendering took longer than %v", s.lim.Timeout)
	}
	return nil
}

// produce charges n bytes to the render and checks them against the limits.
func (s *renderState) produce(n int) error {
	if err := s.step(1); err != nil {
		return err
	}
	if n > s.lim.MaxOutputBytes {
		return s.fail("a value of more than %d bytes", s.lim.MaxOutputBytes)
	}
	s.produced += n
	if s.produced > 16*s.lim.MaxOutputBytes {
		return s.fail("operations produced more than %d bytes in all", 16*s.lim.MaxOutputBytes)
	}
	return nil
}

func stateOf(ctx *exec.Context) *renderState {
	if v, ok := ctx.Get(stateKey); ok {
		if s, ok := v.(*renderState); ok {
			return s
		}
	}
	return nil
}

// valueSize is the size of v as rendered text, roughly: the bytes of its
// strings plus the separators between elements, counted through lists and dicts that share
// parts as often as each part is reached. It stops counting past limit, so
// a value that shares one list 2^40 times costs no more than limit.
func valueSize(v any, limit int) int {
	n := 0
	var walk func(v any, depth int)
	walk = func(v any, depth int) {
		if n > limit {
			return
		}
		if depth > maxNesting {
			n = limit + 1
			return
		}
		switch x := v.(type) {
		case nil, bool, int, int64, float64:
			n++
		case string:
			n += len(x)
		case *exec.Value:
			if x != nil {
				walk(x.Interface(), depth)
			}
		case *exec.Dict:
			n += 4 * len(x.Pairs)
			for _, p := range x.Pairs {
				walk(p.Key, depth+1)
				walk(p.Value, depth+1)
			}
		case []any:
			n += 2 * len(x)
			for _, e := range x {
				walk(e, depth+1)
			}
		case map[string]any:
			for k, e := range x {
				n += len(k)
				walk(e, depth+1)
			}
		default:
			rv := reflect.ValueOf(v)
			switch rv.Kind() {
			case reflect.Slice, reflect.Array:
				n += 2 * rv.Len()
				for i := 0; i < rv.Len() && n <= limit; i++ {
					if rv.Index(i).CanInterface() {
						walk(rv.Index(i).Interface(), depth+1)
					}
				}
			case reflect.Map:
				iter := rv.MapRange()
				for iter.Next() && n <= limit {
					if iter.Key().CanInterface() && iter.Value().CanInterface() {
						walk(iter.Key().Interface(), depth+1)
						walk(iter.Value().Interface(), depth+1)
					}
				}
			case reflect.String:
				n += rv.Len()
			default:
				n++
			}
		}
	}
	walk(v, 0)
	return n
}

// passError returns in, with an error in it made a plain error: gonja
// would report an exec.ErrInvalidCall as a bad call of the guard.
func passError(in *exec.Value) *exec.Value {
	if in.IsError() {
		if err, ok := in.Interface().(exec.ErrInvalidCall); ok {
			return exec.AsValue(fmt.Errorf("%w", error(err)))
		}
	}
	return in
}

// limitMessage finds the message of a limit a string method reached in
// the error gonja made of it (methods see no render state).
func limitMessage(err error) (string, bool) {
	s := err.Error()
	i := strings.Index(s, ErrRenderLimit.Error()+": ")
	if i < 0 {
		return "", false
	}
	msg := s[i+len(ErrRenderLimit.Error())+2:]
	if j := strings.IndexByte(msg, 0); j >= 0 {
		msg = msg[:j]
	}
	return msg, true
}

// guardFilters are the filters the instrumented tree calls.
func guardFilters() map[string]exec.FilterFunction {
	return map[string]exec.FilterFunction{
		// guardLeft records the size of a binary operator's left operand.
		guardLeft: func(e *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			s := stateOf(e.Environment.Context)
			if s == nil || in.IsError() {
				return passError(in)
			}
			size := valueSize(in, s.lim.MaxOutputBytes)
			if size > s.lim.MaxOutputBytes {
				return exec.AsValue(s.fail("a value of more than %d bytes", s.lim.MaxOutputBytes))
			}
			if err := s.step(1); err != nil {
				return exec.AsValue(err)
			}
			s.operands = append(s.operands, size)
			return in
		},
		// guardRight checks what the operator will build from its operands
		// before it builds it; the operator is the filter's argument.
		guardRight: func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
			s := stateOf(e.Environment.Context)
			if s == nil || in.IsError() {
				return passError(in)
			}
			left := 0
			if k := len(s.operands); k > 0 {
				left, s.operands = s.operands[k-1], s.operands[:k-1]
			}
			right := valueSize(in, s.lim.MaxOutputBytes)
			if right > s.lim.MaxOutputBytes {
				return exec.AsValue(s.fail("a value of more than %d bytes", s.lim.MaxOutputBytes))
			}
			op := ""
			if len(params.Args) > 0 {
				op = params.Args[0].String()
			}
			var result int
			switch op {
			case "+", "~":
				result = left + right
			case "*":
				if in.IsInteger() {
					if n := in.Integer(); n > 0 {
						if n > s.lim.MaxOutputBytes {
							return exec.AsValue(s.fail("a value of more than %d bytes", s.lim.MaxOutputBytes))
						}
						result = left * n
					}
				}
			}
			if err := s.produce(result); err != nil {
				return exec.AsValue(err)
			}
			return in
		},
		// guardIter bounds a loop before its items are gathered.
		guardIter: func(e *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			s := stateOf(e.Environment.Context)
			if s == nil || in.IsError() {
				return passError(in)
			}
			if valueSize(in, s.lim.MaxOutputBytes) > s.lim.MaxOutputBytes {
				return exec.AsValue(s.fail("a value of more than %d bytes", s.lim.MaxOutputBytes))
			}
			// A loop gathers its items before its first iteration: count
			// them as steps up front.
			if n := in.Len(); n > s.lim.MaxSteps-s.steps {
				return exec.AsValue(s.fail("more than %d steps (a loop over %d items)", s.lim.MaxSteps, n))
			} else if err := s.step(n + 1); err != nil {
				return exec.AsValue(err)
			}
			return in
		},
		// guardOutput charges a printed value.
		guardOutput: func(e *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
			s := stateOf(e.Environment.Context)
			if s == nil || in.IsError() {
				return passError(in)
			}
			if err := s.produce(valueSize(in, s.lim.MaxOutputBytes)); err != nil {
				return exec.AsValue(err)
			}
			return in
		},
	}
}

// tick is a node the instrumented tree puts at the start of every block
// body: it counts a step and charges the body's literal text. At the start
// of a macro's body or a recursive loop's body it also checks how deep the
// render's scopes are nested.
type tick struct {
	loc   *tokens.Token
	bytes int
	enter bool // a recursive loop's body: check the scope depth
	call  bool // a macro's first node: count a call
	ret   bool // a macro's last node: the call returns
}

func (t *tick) Position() *tokens.Token { return t.loc }
func (t *tick) String() string          { return "tick" }

// Execute implements exec.ControlStructure.
func (t *tick) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	s := stateOf(r.Environment.Context)
	if s == nil {
		return nil
	}
	switch {
	case t.ret:
		s.depth--
		return s.err
	case t.call:
		s.depth++
		if s.depth > s.lim.MaxDepth {
			return s.fail("macro calls nested more than %d deep", s.lim.MaxDepth)
		}
	case t.enter:
		if d := scopeDepth(r.Environment.Context, s.lim.MaxDepth+1); d > s.lim.MaxDepth {
			return s.fail("recursive loop nested more than %d scopes deep", s.lim.MaxDepth)
		}
	}
	return s.produce(t.bytes)
}

// contextParent is the offset of exec.Context's parent pointer: gonja
// keeps it unexported, and the chain of contexts is the one measure of
// how deep a render has recursed that survives errors, break and
// continue.
var contextParent = func() uintptr {
	f, ok := reflect.TypeOf(exec.Context{}).FieldByName("parent")
	if !ok || f.Type != reflect.TypeOf((*exec.Context)(nil)) {
		panic("tokenizer: gonja's exec.Context has no parent field")
	}
	return f.Offset
}()

// scopeDepth counts the contexts from ctx to the root, up to limit.
func scopeDepth(ctx *exec.Context, limit int) int {
	n := 0
	for ctx != nil && n <= limit {
		n++
		ctx = *(**exec.Context)(unsafe.Add(unsafe.Pointer(ctx), contextParent))
	}
	return n
}

// instrument rewrites a parsed template so that every loop, macro call and
// operation that can grow a value goes through the guards above.
func instrument(root *nodes.Template) {
	seen := map[uintptr]bool{}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Pointer:
			if v.IsNil() || seen[v.Pointer()] {
				return
			}
			seen[v.Pointer()] = true
			ptr := unsafe.Pointer(v.Pointer())
			walk(v.Elem())
			switch v.Type() {
			case reflect.TypeOf((*nodes.BinaryExpression)(nil)):
				b := (*nodes.BinaryExpression)(ptr)
				// By the token's type, as gonja's evaluator decides: a
				// token's text may carry stray bytes ("\x15*" multiplies).
				op, ok := map[tokens.Type]string{tokens.Addition: "+", tokens.Tilde: "~", tokens.Multiply: "*"}[b.Operator.Token.Type]
				if !ok {
					break
				}
				b.Left = guarded(b.Left, guardLeft)
				b.Right = guarded(b.Right, guardRight, &nodes.String{Location: b.Operator.Token, Val: op})
			case reflect.TypeOf((*controlStructures.ForControlStructure)(nil)):
				f := (*controlStructures.ForControlStructure)(ptr)
				f.ObjectEvaluator = guarded(f.ObjectEvaluator, guardIter)
				if f.Recursive && f.BodyWrapper != nil {
					f.BodyWrapper.Nodes = append([]nodes.Node{tickNode(f.BodyWrapper, true)}, f.BodyWrapper.Nodes...)
				}
			case reflect.TypeOf((*nodes.Output)(nil)):
				o := (*nodes.Output)(ptr)
				o.Expression = guarded(o.Expression, guardOutput)
				if o.Alternative != nil {
					o.Alternative = guarded(o.Alternative, guardOutput)
				}
			case reflect.TypeOf((*nodes.Macro)(nil)):
				m := (*nodes.Macro)(ptr)
				if m.Wrapper != nil {
					call, ret := tickNode(m.Wrapper, false), tickNode(m.Wrapper, false)
					call.ControlStructure.(*tick).call = true
					ret.ControlStructure.(*tick).ret, ret.ControlStructure.(*tick).bytes = true, 0
					m.Wrapper.Nodes = append(append([]nodes.Node{call}, m.Wrapper.Nodes...), ret)
				}
			case reflect.TypeOf((*nodes.Wrapper)(nil)):
				w := (*nodes.Wrapper)(ptr)
				w.Nodes = append([]nodes.Node{tickNode(w, false)}, w.Nodes...)
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				walk(v.Field(i))
			}
		case reflect.Slice, reflect.Array:
			for i := 0; i < v.Len(); i++ {
				walk(v.Index(i))
			}
		case reflect.Map:
			iter := v.MapRange()
			for iter.Next() {
				walk(iter.Value())
			}
		}
	}
	walk(reflect.ValueOf(root))
}

func guarded(e nodes.Expression, filter string, args ...nodes.Expression) nodes.Expression {
	if e == nil {
		return nil
	}
	return &nodes.FilteredExpression{Expression: e, Filters: []*nodes.FilterCall{{Token: e.Position(), Name: filter, Args: args}}}
}

// tickNode makes the tick block for w, charging the literal text w holds.
func tickNode(w *nodes.Wrapper, enter bool) *nodes.ControlStructureBlock {
	n := 0
	for _, c := range w.Nodes {
		if d, ok := c.(*nodes.Data); ok && d.Data != nil {
			n += len(d.Data.Val)
		}
	}
	loc := w.Location
	if loc == nil {
		loc = &tokens.Token{}
	}
	t := &tick{loc: loc, bytes: n, enter: enter}
	return &nodes.ControlStructureBlock{Location: loc, Name: tickName, ControlStructure: t}
}

// limitedWriter stops a render whose text grows past the limit.
type limitedWriter struct {
	w io.Writer
	n int
	s *renderState
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.s.err != nil {
		return 0, l.s.err
	}
	l.n += len(p)
	if l.n > l.s.lim.MaxOutputBytes {
		return 0, l.s.fail("output of more than %d bytes", l.s.lim.MaxOutputBytes)
	}
	return l.w.Write(p)
}

// Filters, methods and functions that build a result in proportion to an
// argument are checked before they run and their results after.

// builtinFilterNames lists gonja's filters (builtins.Filters has no list).
var builtinFilterNames = strings.Fields(`abs attr batch capitalize center default d dictsort e escape
	filesizeformat first float forceescape format groupby indent int join items last length count list
	lower map max min pprint random rejectattr reject replace reverse round safe selectattr select slice
	sort string striptags sum title tojson trim truncate unique upper urlencode urlize wordcount wordwrap xmlattr`)

// builtinStrMethodNames lists gonja's string methods.
var builtinStrMethodNames = strings.Fields(`capitalize capwords casefold center count encode endswith expandtabs
	find format format_map isalnum isalpha isascii isdecimal isdigit islower isnumeric isprintable isspace
	istitle isupper join ljust lower lstrip partition removeprefix removesuffix replace rfind rjust rpartition
	rsplit rstrip split splitlines startswith strip swapcase title upper zfill`)

// estimate is a bound on the size of what name builds from in and args,
// or an error when an argument alone is too large.
func estimate(name string, in any, args *exec.VarArgs, limit int) (int, error) {
	size := valueSize(in, limit)
	count := 1
	if rv := reflect.ValueOf(in); rv.Kind() == reflect.Slice || rv.Kind() == reflect.Map {
		count = max(rv.Len(), 1)
	} else if s, ok := in.(string); ok && len(s) > 0 {
		count = len(s)
	}
	extra := 0
	if str, ok := in.(string); ok && (name == "format" || name == "format_map") {
		if w := widestField(str); w > limit {
			return 0, fmt.Errorf("%w: %s with a field width of %d", ErrRenderLimit, name, w)
		}
	}
	check := func(a *exec.Value) error {
		if a == nil {
			return nil
		}
		if a.IsInteger() {
			if a.Integer() > limit {
				return fmt.Errorf("%w: %s with an argument of %d", ErrRenderLimit, name, a.Integer())
			}
			// A width or count: each item may take as many bytes.
			extra += max(a.Integer(), 0)
			return nil
		}
		if a.IsString() {
			str := a.String()
			if w := widestField(str); w > limit {
				return fmt.Errorf("%w: %s with a field width of %d", ErrRenderLimit, name, w)
			}
		}
		extra += valueSize(a, limit)
		return nil
	}
	if args != nil {
		for _, a := range args.Args {
			if err := check(a); err != nil {
				return 0, err
			}
		}
		for _, a := range args.KwArgs {
			if err := check(a); err != nil {
				return 0, err
			}
		}
	}
	switch name {
	case "replace", "join", "expandtabs", "indent", "wordwrap", "center", "ljust", "rjust", "zfill", "format":
		// Each item or character may take an argument's size.
		if extra > 0 && count > limit/extra {
			return limit + 1, nil
		}
		return size + count*extra, nil
	}
	return size + extra, nil
}

// widestField is the largest run of digits in s, the widest field a format
// string could ask for.
func widestField(s string) int {
	widest, run := 0, 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] >= '0' && s[i] <= '9' {
			run++
			continue
		}
		if run > 0 {
			n, err := strconv.Atoi(s[i-run : i])
			if err != nil || run > 18 {
				n = int(^uint(0) >> 1)
			}
			widest = max(widest, n)
		}
		run = 0
	}
	return widest
}

// limitFilter wraps a filter with checks before and after.
func limitFilter(name string, f exec.FilterFunction) exec.FilterFunction {
	return func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		s := stateOf(e.Environment.Context)
		if s == nil {
			return f(e, in, params)
		}
		if s.err != nil {
			return exec.AsValue(s.err)
		}
		est, err := estimate(name, in.Interface(), params, s.lim.MaxOutputBytes)
		if err != nil {
			s.err = err
			return exec.AsValue(err)
		}
		if err := s.produce(est); err != nil {
			return exec.AsValue(err)
		}
		out := f(e, in, params)
		if out != nil && !out.IsError() {
			if err := s.produce(valueSize(out, s.lim.MaxOutputBytes)); err != nil {
				return exec.AsValue(err)
			}
		}
		return out
	}
}

// limitStrMethod wraps a string method with a check of its arguments; a
// method has no render state, so it checks against the default limits.
func limitStrMethod(name string, m exec.Method[string], limit int) exec.Method[string] {
	return func(self string, selfValue *exec.Value, args *exec.VarArgs) (any, error) {
		est, err := estimate(name, self, args, limit)
		if err != nil {
			return nil, fmt.Errorf("%w\x00", err)
		}
		if est > limit {
			return nil, fmt.Errorf("%w: %s would build more than %d bytes\x00", ErrRenderLimit, name, limit)
		}
		return m(self, selfValue, args)
	}
}

// limitedMethods returns gonja's methods with the string methods checked.
func limitedMethods(limit int) exec.Methods {
	m := builtins.Methods
	strs := map[string]exec.Method[string]{}
	for _, name := range builtinStrMethodNames {
		if f, ok := m.Str.Get(name); ok {
			strs[name] = limitStrMethod(name, f, limit)
		}
	}
	m.Str = exec.NewMethodSet(strs)
	return m
}

// limitedRange is range() with its length checked before anything is
// built.
func limitedRange(e *exec.Evaluator, params *exec.VarArgs) *exec.Value {
	var start, stop, step = 0, 0, 1
	ints := make([]int, len(params.Args))
	for i, a := range params.Args {
		if !a.IsInteger() {
			return exec.AsValue(errors.New("range: want integer arguments"))
		}
		ints[i] = a.Integer()
	}
	switch len(ints) {
	case 1:
		stop = ints[0]
	case 2:
		start, stop = ints[0], ints[1]
	case 3:
		start, stop, step = ints[0], ints[1], ints[2]
	default:
		return exec.AsValue(errors.New("range: want [start, ]stop[, step]"))
	}
	if step == 0 {
		return exec.AsValue(errors.New("range: step cannot be 0"))
	}
	n := 0
	if step > 0 && stop > start {
		n = int((uint64(stop-start) + uint64(step) - 1) / uint64(step))
	} else if step < 0 && start > stop {
		n = int((uint64(start-stop) + uint64(-step) - 1) / uint64(-step))
	}
	if s := stateOf(e.Environment.Context); s != nil {
		if n > s.lim.MaxSteps-s.steps || n < 0 {
			return exec.AsValue(s.fail("more than %d steps (range of %d items)", s.lim.MaxSteps, n))
		}
		if err := s.step(1); err != nil {
			return exec.AsValue(err)
		}
	} else if n > DefaultRenderLimits().MaxSteps || n < 0 {
		return exec.AsValue(fmt.Errorf("%w: range of %d items", ErrRenderLimit, n))
	}
	out := make([]any, n)
	for i := range out {
		out[i] = start + i*step
	}
	return exec.AsValue(out)
}

// controlStructureSet is gonja's statements less include, import, from
// and extends, which would read files.
func controlStructureSet() *exec.ControlStructureSet {
	m := map[string]parser.ControlStructureParser{}
	for _, name := range strings.Fields("autoescape block filter for if macro raw set with do break continue trans call") {
		if p, ok := builtins.ControlStructures.Get(name); ok {
			m[name] = p
		}
	}
	return exec.NewControlStructureSet(m)
}
