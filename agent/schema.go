package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// schema is the JSON Schema of one value, the subset chat templates render
// and tool calls are checked against: the types of JSON, array items,
// object properties (in declaration order) with their required set, enums
// and descriptions.
type schema struct {
	Type        string // "string", "integer", "number", "boolean", "array", "object", or "" for any value
	Description string
	Enum        []string
	Items       *schema          // arrays
	Props       []prop           // objects built from structs, in field order
	Additional  *schema          // objects built from maps: the values' schema
	Nullable    bool             // a pointer, slice or map: JSON null is accepted
	required    map[string]bool  // objects from structs
	byName      map[string]*prop // objects from structs
}

type prop struct {
	Name     string
	Required bool
	Schema   *schema
}

var rawMessageType = reflect.TypeFor[json.RawMessage]()

// schemaOf derives the schema of t, the type of a tool's arguments. Struct
// fields are named by their json tag (as encoding/json), described by a
// `desc:"..."` tag and restricted by `enum:"a,b,c"`; a field is required
// unless its json tag has omitempty or omitzero or it is a pointer.
func schemaOf(t reflect.Type, seen map[reflect.Type]bool) (*schema, error) {
	if t == rawMessageType {
		return &schema{}, nil
	}
	switch t.Kind() {
	case reflect.Pointer:
		s, err := schemaOf(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		c := *s
		c.Nullable = true
		return &c, nil
	case reflect.String:
		return &schema{Type: "string"}, nil
	case reflect.Bool:
		return &schema{Type: "boolean"}, nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return &schema{Type: "integer"}, nil
	case reflect.Float32, reflect.Float64:
		return &schema{Type: "number"}, nil
	case reflect.Interface:
		if t.NumMethod() == 0 {
			return &schema{}, nil
		}
	case reflect.Slice, reflect.Array:
		items, err := schemaOf(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		return &schema{Type: "array", Items: items, Nullable: t.Kind() == reflect.Slice}, nil
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map key type %s: only string keys are JSON objects", t.Key())
		}
		vals, err := schemaOf(t.Elem(), seen)
		if err != nil {
			return nil, err
		}
		return &schema{Type: "object", Additional: vals, Nullable: true}, nil
	case reflect.Struct:
		return structSchema(t, seen)
	}
	return nil, fmt.Errorf("type %s has no JSON Schema", t)
}

func structSchema(t reflect.Type, seen map[reflect.Type]bool) (*schema, error) {
	if seen[t] {
		return nil, fmt.Errorf("type %s is recursive", t)
	}
	seen[t] = true
	defer delete(seen, t)
	s := &schema{Type: "object", required: map[string]bool{}, byName: map[string]*prop{}}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if f.Anonymous {
			return nil, fmt.Errorf("field %s.%s: embedded fields are not supported", t, f.Name)
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		fs, err := schemaOf(f.Type, seen)
		if err != nil {
			return nil, fmt.Errorf("field %s.%s: %w", t, f.Name, err)
		}
		fs.Description = f.Tag.Get("desc")
		if e, ok := f.Tag.Lookup("enum"); ok {
			if fs.Type != "string" {
				return nil, fmt.Errorf("field %s.%s: an enum tag needs a string field", t, f.Name)
			}
			for _, v := range strings.Split(e, ",") {
				if v = strings.TrimSpace(v); v != "" {
					fs.Enum = append(fs.Enum, v)
				}
			}
			if len(fs.Enum) == 0 {
				return nil, fmt.Errorf("field %s.%s: empty enum tag", t, f.Name)
			}
		}
		if _, dup := s.byName[name]; dup {
			return nil, fmt.Errorf("field %s.%s: JSON name %q used twice", t, f.Name, name)
		}
		optional := f.Type.Kind() == reflect.Pointer
		for _, o := range strings.Split(opts, ",") {
			if o == "omitempty" || o == "omitzero" {
				optional = true
			}
		}
		s.Props = append(s.Props, prop{Name: name, Required: !optional, Schema: fs})
		s.byName[name] = &s.Props[len(s.Props)-1]
		if !optional {
			s.required[name] = true
		}
	}
	// byName points into Props: rebuild after the appends moved it.
	for i := range s.Props {
		s.byName[s.Props[i].Name] = &s.Props[i]
	}
	return s, nil
}

// MarshalJSON writes the schema as the OpenAI / Hugging Face function
// format writes it: "type", then "description", "enum", "items",
// "properties" and "required", in that order (templates print it with
// tojson, which keeps the order).
func (s *schema) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	first := true
	field := func(k string, v any) error {
		if !first {
			b.WriteByte(',')
		}
		first = false
		kb, _ := json.Marshal(k)
		b.Write(kb)
		b.WriteByte(':')
		vb, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(vb)
		return nil
	}
	if s.Type != "" {
		_ = field("type", s.Type)
	}
	if s.Description != "" {
		_ = field("description", s.Description)
	}
	if len(s.Enum) > 0 {
		_ = field("enum", s.Enum)
	}
	if s.Items != nil {
		if err := field("items", s.Items); err != nil {
			return nil, err
		}
	}
	if s.Type == "object" && s.Additional == nil {
		var body bytes.Buffer
		body.WriteByte('{')
		for i, p := range s.Props {
			if i > 0 {
				body.WriteByte(',')
			}
			kb, _ := json.Marshal(p.Name)
			body.Write(kb)
			body.WriteByte(':')
			vb, err := json.Marshal(p.Schema)
			if err != nil {
				return nil, err
			}
			body.Write(vb)
		}
		body.WriteByte('}')
		if err := field("properties", json.RawMessage(body.Bytes())); err != nil {
			return nil, err
		}
		var req []string
		for _, p := range s.Props {
			if p.Required {
				req = append(req, p.Name)
			}
		}
		if len(req) > 0 {
			_ = field("required", req)
		}
	}
	if s.Additional != nil {
		if err := field("additionalProperties", s.Additional); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// check reports the first way v (decoded with UseNumber) does not fit s,
// naming the path of the offending value.
func (s *schema) check(v any, path string) error {
	if v == nil {
		if s.Nullable || s.Type == "" {
			return nil
		}
		return fmt.Errorf("%s: want %s, got null", pathName(path), s.Type)
	}
	switch s.Type {
	case "":
		return nil
	case "string":
		str, ok := v.(string)
		if !ok {
			return fmt.Errorf("%s: want string, got %s", pathName(path), jsonKind(v))
		}
		if len(s.Enum) > 0 && !contains(s.Enum, str) {
			return fmt.Errorf("%s: %q is not one of %s", pathName(path), str, strings.Join(quoteAll(s.Enum), ", "))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Errorf("%s: want boolean, got %s", pathName(path), jsonKind(v))
		}
	case "integer":
		n, ok := v.(json.Number)
		if !ok {
			return fmt.Errorf("%s: want integer, got %s", pathName(path), jsonKind(v))
		}
		if _, err := n.Int64(); err != nil {
			return fmt.Errorf("%s: want integer, got %s", pathName(path), n)
		}
	case "number":
		if _, ok := v.(json.Number); !ok {
			return fmt.Errorf("%s: want number, got %s", pathName(path), jsonKind(v))
		}
	case "array":
		xs, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: want array, got %s", pathName(path), jsonKind(v))
		}
		for i, x := range xs {
			if err := s.Items.check(x, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want object, got %s", pathName(path), jsonKind(v))
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			sub := joinPath(path, k)
			if s.Additional != nil {
				if err := s.Additional.check(m[k], sub); err != nil {
					return err
				}
				continue
			}
			p, ok := s.byName[k]
			if !ok {
				return fmt.Errorf("%s: unknown argument (want %s)", pathName(sub), strings.Join(quoteAll(s.names()), ", "))
			}
			if err := p.Schema.check(m[k], sub); err != nil {
				return err
			}
		}
		for _, p := range s.Props {
			if _, ok := m[p.Name]; !ok && p.Required {
				return fmt.Errorf("%s: missing", pathName(joinPath(path, p.Name)))
			}
		}
	}
	return nil
}

func (s *schema) names() []string {
	out := make([]string, len(s.Props))
	for i, p := range s.Props {
		out[i] = p.Name
	}
	return out
}

func joinPath(path, k string) string {
	if path == "" {
		return k
	}
	return path + "." + k
}

func pathName(path string) string {
	if path == "" {
		return "arguments"
	}
	return fmt.Sprintf("argument %q", path)
}

func jsonKind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func quoteAll(xs []string) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = fmt.Sprintf("%q", x)
	}
	return out
}

// decodeJSON decodes one JSON value with numbers kept as json.Number, and
// rejects trailing data.
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}
