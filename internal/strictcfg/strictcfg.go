// Package strictcfg decodes configuration files (JSON, or YAML converted
// to JSON) into Go structs strictly: a key that names no field, at any
// depth, is an error that suggests the nearest known key by edit distance
// ("unknown key \"lerning_rate\" (did you mean \"learning_rate\"?)"), so
// that a typo is never a silently ignored setting. Keys must match the
// json tags exactly (encoding/json alone would also accept other cases).
package strictcfg

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// ExpandHome replaces a leading "~" (alone or before a slash) of a path
// read from a config file with the user's home folder, as a shell does for
// flags; other paths come back as they are, and so does the path when the
// home folder is unknown (opening it then names it as written).
func ExpandHome(p string) string {
	if p != "~" && !strings.HasPrefix(p, "~/") && !strings.HasPrefix(p, "~"+string(filepath.Separator)) {
		return p
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return p
	}
	return filepath.Join(home, p[1:])
}

// Foreign answers for a key the struct has no field for (path is the
// key with its sections, "model.use_dora"), before it is reported as
// unknown: known true accepts it (its value is not decoded), a non-nil
// error replaces the unknown-key error. It lets a config accept or
// explain another program's keys (TRL's) without fields for them.
type Foreign func(path string, value any) (known bool, err error)

// DecodeFile reads path and decodes it into v (see Decode); a file named
// *.yaml or *.yml is read as YAML, anything else as JSON.
func DecodeFile(path string, v any) error { return DecodeFileForeign(path, v, nil) }

// DecodeFileForeign is DecodeFile with foreign's answer for unknown keys.
func DecodeFileForeign(path string, v any, foreign Foreign) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if ext := strings.ToLower(filepath.Ext(path)); ext == ".yaml" || ext == ".yml" {
		if data, err = YAMLToJSON(data); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	if err := DecodeForeign(data, v, foreign); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// YAMLToJSON converts a YAML document (a mapping at the top) to JSON.
func YAMLToJSON(data []byte) ([]byte, error) {
	var doc any
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("invalid YAML: %w", err)
	}
	if doc == nil {
		return []byte("{}"), nil
	}
	doc, err := jsonable(doc)
	if err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// jsonable turns YAML's map[any]any (non-string keys) into string keys.
func jsonable(v any) (any, error) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			var err error
			if x[k], err = jsonable(e); err != nil {
				return nil, err
			}
		}
		return x, nil
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			s, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("key %v is not a string", k)
			}
			var err error
			if out[s], err = jsonable(e); err != nil {
				return nil, err
			}
		}
		return out, nil
	case []any:
		for i, e := range x {
			var err error
			if x[i], err = jsonable(e); err != nil {
				return nil, err
			}
		}
		return x, nil
	}
	return v, nil
}

// Decode decodes the JSON object data into v, a pointer to a struct that
// holds the defaults: keys present replace them, keys absent keep them.
// Every unknown key is reported (joined), each with the nearest known key.
func Decode(data []byte, v any) error { return DecodeForeign(data, v, nil) }

// DecodeForeign is Decode with foreign's answer for unknown keys.
func DecodeForeign(data []byte, v any, foreign Foreign) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() {
		return errors.New("strictcfg: Decode needs a non-nil pointer")
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	if err := errors.Join(check(doc, rv.Type().Elem(), "", foreign)...); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fmt.Errorf("key %q: got a %s, want %s", userKey(rv.Type().Elem(), te.Field), te.Value, kindName(te.Type))
		}
		return err
	}
	return nil
}

var (
	jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// check returns an error for each key of doc that t has no field for.
func check(doc any, t reflect.Type, path string, foreign Foreign) []error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(jsonUnmarshaler) || reflect.PointerTo(t).Implements(textUnmarshaler) {
		return nil
	}
	var errs []error
	switch t.Kind() {
	case reflect.Struct:
		obj, ok := doc.(map[string]any)
		if !ok {
			return nil // a type error, which json.Unmarshal reports
		}
		fields := Fields(t)
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ft, ok := fields[k]
			if !ok && foreign != nil {
				known, err := foreign(path+k, obj[k])
				if err != nil {
					errs = append(errs, err)
				}
				if known || err != nil {
					continue
				}
			}
			if !ok {
				names := make([]string, 0, len(fields))
				for n := range fields {
					names = append(names, n)
				}
				msg := fmt.Sprintf("unknown key %q", path+k)
				if s := Suggest(k, names); s != "" {
					msg += fmt.Sprintf(" (did you mean %q?)", path+s)
				}
				errs = append(errs, errors.New(msg))
				continue
			}
			errs = append(errs, check(obj[k], ft, path+k+".", foreign)...)
		}
	case reflect.Map:
		if obj, ok := doc.(map[string]any); ok {
			for k, e := range obj {
				errs = append(errs, check(e, t.Elem(), path+k+".", foreign)...)
			}
		}
	case reflect.Slice, reflect.Array:
		if arr, ok := doc.([]any); ok {
			for i, e := range arr {
				errs = append(errs, check(e, t.Elem(), fmt.Sprintf("%s%d.", path, i), foreign)...)
			}
		}
	}
	return errs
}

// Fields returns the JSON keys of struct type t (embedded structs'
// included, "-" and unexported fields excluded) with their types.
func Fields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for k, v := range Fields(ft) {
					if _, ok := out[k]; !ok {
						out[k] = v
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// Keys returns the sorted JSON keys of the struct v points to or is.
func Keys(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for k := range Fields(t) {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Suggest returns the known key nearest to key by edit distance (at most
// a third of the key's length away, at least 2 edits allowed), else the
// shortest known key that contains key (of 4 bytes or more: "steps" →
// "max_steps"), else "".
func Suggest(key string, known []string) string {
	best, bestD := "", max(2, len(key)/3)+1
	sorted := slices.Clone(known)
	slices.Sort(sorted)
	for _, k := range sorted {
		if d := distance(key, k); d < bestD {
			best, bestD = k, d
		}
	}
	if best == "" && len(key) >= 4 {
		for _, k := range sorted {
			if strings.Contains(k, key) && (best == "" || len(k) < len(best)) {
				best = k
			}
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b (bytes).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// userKey is encoding/json's dotted path of a field said as the file spells
// it: the Go names of embedded structs that encoding/json puts in the path
// ("Config.learning_rate") are left out.
func userKey(t reflect.Type, path string) string {
	var out []string
	for _, seg := range strings.Split(path, ".") {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			out = append(out, seg)
			continue
		}
		if f, ok := t.FieldByName(seg); ok && f.Anonymous && f.Tag.Get("json") == "" {
			t = f.Type
			continue
		}
		if ft, ok := Fields(t)[seg]; ok {
			t = ft
		}
		out = append(out, seg)
	}
	return strings.Join(out, ".")
}

// kindName says what a config value of type t is written as.
func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
}
