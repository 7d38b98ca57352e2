package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// parseOrderedJSON decodes JSON keeping object key order: objects become
// *exec.Dict (gonja's ordered dict), arrays []any, integers int, other
// numbers float64.
func parseOrderedJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeOrdered(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("trailing data after JSON value")
	}
	return v, nil
}

func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			d := exec.NewDict()
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key %v is not a string", kt)
				}
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				d.Pairs = append(d.Pairs, &exec.Pair{Key: exec.AsValue(k), Value: exec.AsValue(v)})
			}
			_, err := dec.Token()
			return d, err
		case '[':
			list := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				list = append(list, v)
			}
			_, err := dec.Token()
			return list, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		if i, err := strconv.Atoi(t.String()); err == nil {
			return i, nil
		}
		return t.Float64()
	default:
		return t, nil // string, bool or nil
	}
}

// filterToJSON is Python's json.dumps as transformers calls it from
// templates: separators ", " and ": " (or "," with indent), insertion key
// order, ensure_ascii off unless asked, sort_keys optional.
func filterToJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	opts := pyJSONOpts{}
	for k, v := range params.KwArgs {
		switch k {
		case "indent":
			if !v.IsNil() {
				if !v.IsInteger() {
					return exec.AsValue(errors.New("tojson: indent must be an integer"))
				}
				opts.indent = v.Integer()
				opts.pretty = true
			}
		case "ensure_ascii":
			opts.ascii = v.IsTrue()
		case "sort_keys":
			opts.sortKeys = v.IsTrue()
		case "separators":
			// accepted; Python's defaults are what templates use
		default:
			return exec.AsValue(fmt.Errorf("tojson: unexpected keyword argument %q", k))
		}
	}
	if len(params.Args) > 0 {
		return exec.AsValue(errors.New("tojson: unexpected positional argument"))
	}
	var b strings.Builder
	if err := writePyJSON(&b, in.Interface(), opts, 0); err != nil {
		return exec.AsValue(fmt.Errorf("tojson: %w", err))
	}
	return exec.AsSafeValue(b.String())
}

type pyJSONOpts struct {
	pretty   bool
	indent   int
	ascii    bool
	sortKeys bool
}

func (o pyJSONOpts) newline(b *strings.Builder, depth int) {
	b.WriteByte('\n')
	b.WriteString(strings.Repeat(" ", o.indent*depth))
}

func writePyJSON(b *strings.Builder, v any, o pyJSONOpts, depth int) error {
	if depth > 100 {
		return errors.New("nesting too deep")
	}
	switch t := v.(type) {
	case nil:
		b.WriteString("null")
		return nil
	case *exec.Value:
		if t == nil || t.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writePyJSON(b, t.Interface(), o, depth)
	case string:
		writePyString(b, t, o.ascii)
		return nil
	case bool:
		if t {
			b.WriteString("true")
		} else {
			b.WriteString("false")
		}
		return nil
	case float64:
		b.WriteString(pyFloat(t))
		return nil
	case float32:
		b.WriteString(pyFloat(float64(t)))
		return nil
	case exec.Dict:
		return writePyJSON(b, &t, o, depth)
	case *exec.Dict:
		keys := make([]string, len(t.Pairs))
		vals := make([]any, len(t.Pairs))
		for i, p := range t.Pairs {
			keys[i], vals[i] = p.Key.String(), p.Value
		}
		return writePyObject(b, keys, vals, o, depth)
	case error:
		return t
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		b.WriteString(strconv.FormatInt(rv.Int(), 10))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		b.WriteString(strconv.FormatUint(rv.Uint(), 10))
	case reflect.String:
		writePyString(b, rv.String(), o.ascii)
	case reflect.Slice, reflect.Array:
		b.WriteByte('[')
		for i := 0; i < rv.Len(); i++ {
			if i > 0 {
				b.WriteByte(',')
				if !o.pretty {
					b.WriteByte(' ')
				}
			}
			if o.pretty {
				o.newline(b, depth+1)
			}
			if err := writePyJSON(b, rv.Index(i).Interface(), o, depth+1); err != nil {
				return err
			}
		}
		if o.pretty && rv.Len() > 0 {
			o.newline(b, depth)
		}
		b.WriteByte(']')
	case reflect.Map:
		keys := make([]string, 0, rv.Len())
		vals := map[string]any{}
		for _, k := range rv.MapKeys() {
			ks := fmt.Sprint(k.Interface())
			keys = append(keys, ks)
			vals[ks] = rv.MapIndex(k).Interface()
		}
		sort.Strings(keys) // Go maps have no order; sorted is deterministic
		list := make([]any, len(keys))
		for i, k := range keys {
			list[i] = vals[k]
		}
		return writePyObject(b, keys, list, o, depth)
	case reflect.Pointer, reflect.Interface:
		if rv.IsNil() {
			b.WriteString("null")
			return nil
		}
		return writePyJSON(b, rv.Elem().Interface(), o, depth)
	default:
		return fmt.Errorf("object of type %T is not JSON serializable", v)
	}
	return nil
}

func writePyObject(b *strings.Builder, keys []string, vals []any, o pyJSONOpts, depth int) error {
	idx := make([]int, len(keys))
	for i := range idx {
		idx[i] = i
	}
	if o.sortKeys {
		sort.SliceStable(idx, func(i, j int) bool { return keys[idx[i]] < keys[idx[j]] })
	}
	b.WriteByte('{')
	for n, i := range idx {
		if n > 0 {
			b.WriteByte(',')
			if !o.pretty {
				b.WriteByte(' ')
			}
		}
		if o.pretty {
			o.newline(b, depth+1)
		}
		writePyString(b, keys[i], o.ascii)
		b.WriteString(": ")
		if err := writePyJSON(b, vals[i], o, depth+1); err != nil {
			return err
		}
	}
	if o.pretty && len(keys) > 0 {
		o.newline(b, depth)
	}
	b.WriteByte('}')
	return nil
}

// writePyString escapes like Python's json module.
func writePyString(b *strings.Builder, s string, ascii bool) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			switch {
			case r < 0x20 || ascii && r == 0x7f:
				fmt.Fprintf(b, `\u%04x`, r)
			case ascii && r >= 0x80:
				if r >= 0x10000 {
					r -= 0x10000
					hi, lo := 0xD800+(r>>10), 0xDC00+(r&0x3FF)
					fmt.Fprintf(b, `\u%04x\u%04x`, hi, lo)
				} else {
					b.WriteString(`\u`)
					b.WriteByte(hex[r>>12&0xF])
					b.WriteByte(hex[r>>8&0xF])
					b.WriteByte(hex[r>>4&0xF])
					b.WriteByte(hex[r&0xF])
				}
			default:
				var buf [4]byte
				n := utf8.EncodeRune(buf[:], r)
				b.Write(buf[:n])
			}
		}
	}
	b.WriteByte('"')
}

// pyFloat formats like Python's repr(float).
func pyFloat(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, expS, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expS)
	if exp < -4 || exp >= 16 {
		sign := "+"
		if exp < 0 {
			sign, exp = "-", -exp
		}
		return fmt.Sprintf("%se%s%02d", mant, sign, exp)
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

// strftime formats t with the common C/Python directives.
func strftime(t time.Time, format string) string {
	var b strings.Builder
	for i := 0; i < len(format); i++ {
		c := format[i]
		if c != '%' || i+1 == len(format) {
			b.WriteByte(c)
			continue
		}
		i++
		pad := true
		if format[i] == '-' && i+1 < len(format) { // glibc: no padding
			pad = false
			i++
		}
		num := func(v, width int) {
			if pad {
				fmt.Fprintf(&b, "%0*d", width, v)
			} else {
				fmt.Fprintf(&b, "%d", v)
			}
		}
		switch format[i] {
		case 'Y':
			fmt.Fprintf(&b, "%d", t.Year())
		case 'y':
			num(t.Year()%100, 2)
		case 'm':
			num(int(t.Month()), 2)
		case 'd':
			num(t.Day(), 2)
		case 'e':
			fmt.Fprintf(&b, "%2d", t.Day())
		case 'H':
			num(t.Hour(), 2)
		case 'I':
			h := t.Hour() % 12
			if h == 0 {
				h = 12
			}
			num(h, 2)
		case 'M':
			num(t.Minute(), 2)
		case 'S':
			num(t.Second(), 2)
		case 'j':
			num(t.YearDay(), 3)
		case 'p':
			if t.Hour() < 12 {
				b.WriteString("AM")
			} else {
				b.WriteString("PM")
			}
		case 'b', 'h':
			b.WriteString(t.Month().String()[:3])
		case 'B':
			b.WriteString(t.Month().String())
		case 'a':
			b.WriteString(t.Weekday().String()[:3])
		case 'A':
			b.WriteString(t.Weekday().String())
		case 'Z':
			z, _ := t.Zone()
			b.WriteString(z)
		case 'z':
			b.WriteString(t.Format("-0700"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(format[i])
		}
	}
	return b.String()
}
