package gguf

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// FuzzOpen checks that no file, however broken, makes Open panic or hang,
// that every error is a *FormatError naming the file, and that an
// accepted file keeps every tensor inside it and reads back: Raw returns
// Size bytes and Float32 either decodes or names an unsupported type.
func FuzzOpen(f *testing.F) {
	f.Add(encodeTestFile(f, smallMeta, smallTensors))
	f.Add(encodeTestFile(f, []kv{{"general.alignment", uint32(64)}, {"a", []string{"x", ""}}},
		[]testTensor{{"w", []int{1, 1, 2, 256}, TypeQ6_K}, {"v", []int{64}, TypeQ5_1}, {"u", []int{256}, TypeQ8_K}}))
	f.Add(start(1, 1).str("k").u32(uint32(typeArray)).u32(uint32(typeArray)).u64(1).u32(uint32(typeInt16)).u64(2).raw(1, 2, 3, 4).
		tensor("t", uint32(TypeBF16), 0, 2, 3).data(12).b)
	f.Add([]byte("GGUF\x02\x00\x00\x00"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return
		}
		tmp, err := os.CreateTemp(dir, "fuzz-*.gguf")
		if err != nil {
			t.Fatal(err)
		}
		path := tmp.Name()
		defer os.Remove(path)
		if _, err := tmp.Write(data); err != nil {
			t.Fatal(err)
		}
		if err := tmp.Close(); err != nil {
			t.Fatal(err)
		}
		g, err := Open(path)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) || fe.Path != path || fe.Field == "" || !strings.HasPrefix(err.Error(), "gguf: "+path+": ") ||
				!(errors.Is(err, ErrFormat) || errors.Is(err, ErrUnsupported)) {
				t.Fatalf("error %v (%T): want a *FormatError naming the file and a field", err, err)
			}
			return
		}
		defer g.Close()
		if g.Version != 2 && g.Version != 3 {
			t.Fatalf("version %d accepted", g.Version)
		}
		for _, ti := range g.Tensors {
			if ti.Offset < 0 || ti.Size < 0 || ti.Offset+ti.Size > int64(len(data)) || ti.Offset%int64(g.Alignment) != 0 {
				t.Fatalf("tensor %q: offset %d, size %d in a %d-byte file", ti.Name, ti.Offset, ti.Size, len(data))
			}
			if len(ti.Shape) < 1 || len(ti.Shape) > 4 {
				t.Fatalf("tensor %q: shape %v", ti.Name, ti.Shape)
			}
			raw, _, err := g.Raw(ti.Name)
			if err != nil || int64(len(raw)) != ti.Size || !bytes.Equal(raw, data[ti.Offset:ti.Offset+ti.Size]) {
				t.Fatalf("tensor %q: Raw: %d bytes, %v", ti.Name, len(raw), err)
			}
			if ti.Size > 1<<16 {
				continue // bounded time per input
			}
			x, shape, err := g.Float32(ti.Name)
			if err != nil {
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("tensor %q (%s): %v", ti.Name, ti.Type, err)
				}
				continue
			}
			if len(x) != ti.numel() || len(shape) != len(ti.Shape) {
				t.Fatalf("tensor %q: %d values for shape %v", ti.Name, len(x), ti.Shape)
			}
		}
		for _, m := range g.Metadata {
			if v, ok := g.Lookup(m.Key); !ok || v == nil {
				t.Fatalf("key %q: not found again", m.Key)
			}
		}
	})
}
