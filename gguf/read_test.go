package gguf

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// testTensor is a tensor of a test file; its data is a byte pattern.
type testTensor struct {
	name  string
	shape []int
	typ   TensorType
}

// encodeTestFile returns a GGUF file written by the package's own
// encoder (the one Write uses): the header, then each tensor's data
// padded to the alignment.
func encodeTestFile(t testing.TB, meta []kv, tensors []testTensor) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := newEncoder(&buf)
	infos := make([]TensorInfo, len(tensors))
	for i, tt := range tensors {
		infos[i] = TensorInfo{Name: tt.name, Shape: tt.shape, Type: tt.typ}
	}
	if err := e.header(meta, infos); err != nil {
		t.Fatal(err)
	}
	for i, ti := range infos {
		data := make([]byte, ti.Type.size(ti.numel()))
		for j := range data {
			data[j] = byte(i + j)
		}
		for _, f := range fp16Fields[ti.Type] { // finite scales
			_, size, _ := ti.Type.block()
			for off := 0; off < len(data); off += size {
				binary.LittleEndian.PutUint16(data[off+f:], 0x3c00)
			}
		}
		e.bytes(data)
		e.pad()
	}
	if err := e.flush(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeTestFile(t testing.TB, path string, meta []kv, tensors []testTensor) {
	t.Helper()
	if err := os.WriteFile(path, encodeTestFile(t, meta, tensors), 0o644); err != nil {
		t.Fatal(err)
	}
}

// smallMeta and smallTensors make a valid small file with a value of
// each kind the encoder writes and tensors of several types.
var smallMeta = []kv{
	{"general.architecture", "llama"},
	{"general.alignment", uint32(32)},
	{"llama.block_count", uint32(1)},
	{"llama.rope.freq_base", float32(10000)},
	{"llama.attention.layer_norm_rms_epsilon", float32(1e-5)},
	{"tokenizer.ggml.add_bos_token", true},
	{"tokenizer.ggml.tokens", []string{"<s>", "</s>", "a", "b"}},
	{"tokenizer.ggml.token_type", []int32{3, 3, 1, 1}},
	{"tokenizer.ggml.scores", []float32{0, 0, -1, -2}},
	{"general.flags", []bool{true, false}},
}

var smallTensors = []testTensor{
	{"token_embd.weight", []int{4, 32}, TypeQ8_0},
	{"blk.0.attn_norm.weight", []int{32}, TypeF32},
	{"blk.0.ffn_up.weight", []int{2, 256}, TypeQ4_K},
	{"output_norm.weight", []int{3}, TypeF16},
}

// TestOpenReadsWhatTheEncoderWrote: a valid file's header and data come
// back as written.
func TestOpenReadsWhatTheEncoderWrote(t *testing.T) {
	path := filepath.Join(t.TempDir(), "small.gguf")
	writeTestFile(t, path, smallMeta, smallTensors)
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if f.Version != 3 || f.Alignment != 32 || len(f.Metadata) != len(smallMeta) || len(f.Tensors) != len(smallTensors) {
		t.Fatalf("version %d, alignment %d, %d keys, %d tensors", f.Version, f.Alignment, len(f.Metadata), len(f.Tensors))
	}
	if v, ok := f.Lookup("tokenizer.ggml.tokens"); !ok || strings.Join(v.([]string), " ") != "<s> </s> a b" {
		t.Errorf("tokens: %v", v)
	}
	if x, _, err := f.Float("llama.rope.freq_base"); err != nil || x != 10000 {
		t.Errorf("freq_base: %v, %v", x, err)
	}
	for _, tt := range smallTensors {
		ti, ok := f.Tensor(tt.name)
		if !ok || ti.Type != tt.typ || !equalInts(ti.Shape, tt.shape) || ti.Offset%32 != 0 {
			t.Errorf("%s: %+v", tt.name, ti)
		}
		x, shape, err := f.Float32(tt.name)
		if err != nil || len(x) != ti.numel() || !equalInts(shape, tt.shape) {
			t.Errorf("%s: %d values, shape %v, %v", tt.name, len(x), shape, err)
		}
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestOpenTruncated cuts the small file at every byte before the end of
// its last tensor's data: each must be an error naming the file and a
// field, never a panic or a short read later.
func TestOpenTruncated(t *testing.T) {
	full := encodeTestFile(t, smallMeta, smallTensors)
	dir := t.TempDir()
	last := smallTensors[len(smallTensors)-1]
	lastSize := int(last.typ.size((&TensorInfo{Shape: last.shape}).numel()))
	end := len(full) - (alignment-lastSize%alignment)%alignment // where the last tensor's data ends
	headerLen := -1
	for cut := 0; cut < end; cut++ {
		path := filepath.Join(dir, "cut.gguf")
		if err := os.WriteFile(path, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err == nil {
			f.Close()
			t.Fatalf("cut at %d of %d bytes: no error", cut, len(full))
		}
		var fe *FormatError
		if !errors.As(err, &fe) || !errors.Is(err, ErrFormat) || fe.Path != path || fe.Field == "" || !strings.HasPrefix(err.Error(), "gguf: "+path+": ") {
			t.Fatalf("cut at %d: %v (%T)", cut, err, err)
		}
		if !strings.Contains(err.Error(), "truncated?") {
			t.Fatalf("cut at %d: %v does not say the file may be truncated", cut, err)
		}
		if headerLen < 0 && strings.Contains(err.Error(), "past the end") {
			headerLen = cut
		}
	}
	for cut := end; cut <= len(full); cut++ { // the trailing padding is optional
		path := filepath.Join(dir, "cut.gguf")
		if err := os.WriteFile(path, full[:cut], 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatalf("cut at %d of %d (in the final padding): %v", cut, len(full), err)
		}
		f.Close()
	}
	t.Logf("%d cut points: the header fails up to byte %d, the data section after", end, headerLen)
}

// hdr builds a GGUF header by hand, field by field.
type hdr struct{ b []byte }

func (h *hdr) u32(v uint32) *hdr  { h.b = binary.LittleEndian.AppendUint32(h.b, v); return h }
func (h *hdr) u64(v uint64) *hdr  { h.b = binary.LittleEndian.AppendUint64(h.b, v); return h }
func (h *hdr) raw(b ...byte) *hdr { h.b = append(h.b, b...); return h }
func (h *hdr) str(s string) *hdr  { h.u64(uint64(len(s))); h.b = append(h.b, s...); return h }

// start writes the magic, version 3 and the counts.
func start(tensors, kvs uint64) *hdr {
	return new(hdr).u32(magic).u32(3).u64(tensors).u64(kvs)
}

// tensor writes one tensor description (dims in ggml order, innermost
// first).
func (h *hdr) tensor(name string, typ uint32, off uint64, dims ...uint64) *hdr {
	h.str(name).u32(uint32(len(dims)))
	for _, d := range dims {
		h.u64(d)
	}
	return h.u32(typ).u64(off)
}

// pad pads to 32 bytes and appends n data bytes.
func (h *hdr) data(n int) *hdr {
	for len(h.b)%alignment != 0 {
		h.b = append(h.b, 0)
	}
	h.b = append(h.b, make([]byte, n)...)
	return h
}

// TestOpenHostile opens hand-built broken files: each must fail with an
// error that names the file, the field and what is wrong with it.
func TestOpenHostile(t *testing.T) {
	const huge = 1 << 60
	valid := encodeTestFile(t, smallMeta, smallTensors)
	withVersion := func(v uint32) []byte {
		b := bytes.Clone(valid)
		binary.LittleEndian.PutUint32(b[4:], v)
		return b
	}
	alignKey := func(typ uint32, v ...byte) []byte {
		h := start(1, 1).str("general.alignment").u32(typ).raw(v...)
		return h.tensor("w", uint32(TypeF32), 0, 8).data(32).b
	}
	cases := []struct {
		name  string
		file  []byte
		field string // FormatError.Field
		msg   string // in the error text
		err   error  // ErrFormat or ErrUnsupported
	}{
		{"empty file", nil, "magic", "the file ends 4 bytes early (truncated?)", ErrFormat},
		{"wrong magic", append([]byte("GGML"), valid[4:]...), "magic", `magic "GGML", want "GGUF"`, ErrFormat},
		{"safetensors", append(binary.LittleEndian.AppendUint64(nil, 2), "{}"...), "magic", "want \"GGUF\"", ErrFormat},
		{"version 1", withVersion(1), "version", "GGUF version 1", ErrUnsupported},
		{"version 4", withVersion(4), "version", "GGUF version 4 (grpokit reads 2 and 3)", ErrUnsupported},
		{"version 0", withVersion(0), "version", "GGUF version 0", ErrUnsupported},
		{"big-endian", withVersion(3 << 24), "version", "big-endian GGUF file (version 3 byte-swapped)", ErrUnsupported},
		{"absurd tensor count", start(huge, 0).b, "tensor count", "tensor count 1152921504606846976: the 8 bytes left in the file cannot hold that many", ErrFormat},
		{"absurd metadata count", start(0, huge).b, "metadata count", "metadata count 1152921504606846976", ErrFormat},
		{"absurd key length", start(0, 1).u64(huge).data(32).b, "metadata entry 0", "string of 1152921504606846976 bytes, but 32 bytes are left", ErrFormat},
		{"key over 64 KiB", start(0, 1).str(strings.Repeat("k", 1<<16+1)).b, "metadata entry 0", "string of 65537 bytes (at most 65536 here)", ErrFormat},
		{"absurd string length", start(0, 1).str("general.name").u32(uint32(typeString)).u64(huge).raw([]byte("abc")...).b,
			"metadata key general.name", "string of 1152921504606846976 bytes, but 3 bytes are left", ErrFormat},
		{"absurd array length", start(0, 1).str("tokenizer.ggml.tokens").u32(uint32(typeArray)).u32(uint32(typeString)).u64(huge).b,
			"metadata key tokenizer.ggml.tokens", "array length 1152921504606846976: the 0 bytes left", ErrFormat},
		{"array of u8 longer than the file", start(0, 1).str("a").u32(uint32(typeArray)).u32(uint32(typeUint8)).u64(10).raw(1, 2, 3).b,
			"metadata key a", "array length 10: the 3 bytes left", ErrFormat},
		{"array element string runs past the end", start(0, 1).str("t").u32(uint32(typeArray)).u32(uint32(typeString)).u64(2).str("ok").u64(huge).b,
			"metadata key t", "string of 1152921504606846976 bytes, but 0 bytes are left", ErrFormat},
		{"arrays nested too deep", func() []byte {
			h := start(0, 1).str("deep").u32(uint32(typeArray))
			for range 5 {
				h.u32(uint32(typeArray)).u64(1)
			}
			return h.u32(uint32(typeUint8)).u64(0).b
		}(), "metadata key deep", "arrays nested more than 4 deep", ErrFormat},
		{"unknown value type", start(0, 1).str("x").u32(13).u64(0).b, "metadata key x", "unknown value type 13", ErrFormat},
		{"array of unknown type", start(0, 1).str("x").u32(uint32(typeArray)).u32(99).u64(0).b, "metadata key x", "array of unknown value type 99", ErrFormat},
		{"bool 2", start(0, 1).str("b").u32(uint32(typeBool)).raw(2).b, "metadata key b", "bool value 2", ErrFormat},
		{"duplicate key", start(0, 2).str("k").u32(uint32(typeUint8)).raw(1).str("k").u32(uint32(typeUint8)).raw(2).b,
			"metadata key k", "the key appears twice", ErrFormat},
		{"alignment 0", alignKey(uint32(typeUint32), 0, 0, 0, 0), "metadata key general.alignment", "alignment 0: want a power of two", ErrFormat},
		{"alignment 48", alignKey(uint32(typeUint32), 48, 0, 0, 0), "metadata key general.alignment", "alignment 48", ErrFormat},
		{"alignment 2^20", alignKey(uint32(typeUint32), 0, 0, 16, 0), "metadata key general.alignment", "alignment 1048576", ErrFormat},
		{"alignment a uint8", alignKey(uint32(typeUint8), 32), "metadata key general.alignment", "(a uint32)", ErrFormat},
		{"duplicate tensor", start(2, 0).tensor("w", 0, 0, 8).tensor("w", 0, 32, 8).data(64).b, "tensor w", "the name appears twice", ErrFormat},
		{"0 dimensions", start(1, 0).tensor("w", 0, 0).data(32).b, "tensor w", "0 dimensions (want 1 to 4)", ErrFormat},
		{"5 dimensions", start(1, 0).tensor("w", 0, 0, 1, 1, 1, 1, 1).data(32).b, "tensor w", "5 dimensions (want 1 to 4)", ErrFormat},
		{"absurd dimension count", start(1, 0).str("w").u32(1 << 31).data(64).b, "tensor w", "2147483648 dimensions", ErrFormat},
		{"a zero dimension", start(1, 0).tensor("w", 0, 0, 8, 0).data(32).b, "tensor w", "dimension 1 is 0", ErrFormat},
		{"dimensions overflow int64", start(1, 0).tensor("w", 0, 0, 1<<32, 1<<32).data(32).b, "tensor w", "dimension 1 is 4294967296: the tensor's size is absurd", ErrFormat},
		{"dimensions overflow uint64", start(1, 0).tensor("w", 0, 0, 1<<49, 1<<15).data(32).b, "tensor w", "dimension 1 is 32768: the tensor's size is absurd", ErrFormat},
		{"dimensions product wraps to 0", start(1, 0).tensor("w", 0, 0, 1<<40, 1<<24).data(32).b, "tensor w", "dimension 1 is 16777216", ErrFormat},
		{"one dimension 2^63", start(1, 0).tensor("w", 0, 0, 1<<63).data(32).b, "tensor w", "dimension 0 is 9223372036854775808", ErrFormat},
		{"unknown tensor type", start(1, 0).tensor("blk.0.w", 99, 0, 8).data(32).b, "tensor blk.0.w", "tensor type 99, which ggml does not define", ErrUnsupported},
		{"removed tensor type Q4_2", start(1, 0).tensor("w", 4, 0, 32).data(32).b, "tensor w", "tensor type 4", ErrUnsupported},
		{"row not whole blocks", start(1, 0).tensor("w", uint32(TypeQ4_0), 0, 33).data(64).b, "tensor w", "type Q4_0 stores blocks of 32 values, but a row holds 33", ErrFormat},
		{"data runs past the end", start(1, 0).tensor("w", uint32(TypeF32), 0, 16).data(60).b, "tensor w",
			"its 64 bytes of F32 data (shape [16]) end at byte 128, past the end of the 124-byte file (truncated?)", ErrFormat},
		{"second tensor past the end", start(2, 0).tensor("a", 0, 0, 8).tensor("b", 0, 32, 8).data(40).b, "tensor b", "past the end", ErrFormat},
		{"data offset far past the end", start(1, 0).tensor("w", 0, 1<<40, 8).data(32).b, "tensor w", "end at byte 1099511627872, past the end of the 96-byte file", ErrFormat},
		{"data offset 2^62", start(1, 0).tensor("w", 0, 1<<62, 8).data(32).b, "tensor w", "data offset 4611686018427387904 is beyond any file", ErrFormat},
		{"data offset 2^64-32", start(1, 0).tensor("w", 0, math.MaxUint64-31, 8).data(32).b, "tensor w", "is beyond any file", ErrFormat},
		{"misaligned offset", start(2, 0).tensor("a", 0, 0, 8).tensor("b", 0, 33, 8).data(96).b, "tensor b", "data offset 33 is not a multiple of the alignment 32", ErrFormat},
		{"offset misaligned for general.alignment 64", func() []byte {
			h := start(1, 1).str("general.alignment").u32(uint32(typeUint32)).u32(64)
			return h.tensor("w", 0, 32, 8).data(128).b
		}(), "tensor w", "data offset 32 is not a multiple of the alignment 64", ErrFormat},
		{"tensor name not text", start(1, 0).tensor("a\x00\xff", 99, 0, 8).data(32).b, `tensor "a\x00\xff"`, "tensor type 99", ErrUnsupported},
		{"absurd tensor name length", start(1, 0).u64(huge).data(32).b, "tensor 0", "string of 1152921504606846976 bytes", ErrFormat},
		{"truncated tensor description", start(1, 0).str("blk.0.attn_q.weight").u32(2).u64(8).b, "tensor blk.0.attn_q.weight", "the file ends 8 bytes early", ErrFormat},
	}
	dir := t.TempDir()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".gguf")
			if err := os.WriteFile(path, tc.file, 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := Open(path)
			if err == nil {
				f.Close()
				t.Fatalf("no error; want %s: %s", tc.field, tc.msg)
			}
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("%v: a %T, want a *FormatError", err, err)
			}
			if fe.Path != path || fe.Field != tc.field || !errors.Is(err, tc.err) {
				t.Errorf("path %q, field %q, wraps %v: %v; want field %q, wrapping %v", fe.Path, fe.Field, errors.Unwrap(fe.Err), err, tc.field, tc.err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "gguf: "+path+": "+tc.field+": ") || !strings.Contains(msg, tc.msg) {
				t.Errorf("message %q, want %q in it", msg, tc.msg)
			}
		})
	}
}

// TestOpenHostileAllocations: a claimed length or count of 2^60 fails
// before anything that size is allocated: Open allocates well under
// 4 MiB for each (its read buffer is 1 MiB).
func TestOpenHostileAllocations(t *testing.T) {
	const huge = 1 << 60
	dir := t.TempDir()
	for name, file := range map[string][]byte{
		"string":       start(0, 1).str("k").u32(uint32(typeString)).u64(huge).b,
		"array":        start(0, 1).str("k").u32(uint32(typeArray)).u32(uint32(typeUint8)).u64(huge).b,
		"nested array": start(0, 1).str("k").u32(uint32(typeArray)).u32(uint32(typeArray)).u64(huge).b,
		"key":          start(0, 1).u64(huge).data(32).b,
		"tensor name":  start(1, 0).u64(huge).data(32).b,
		"counts":       start(huge, huge).b,
		"dimensions":   start(1, 0).str("w").u32(math.MaxUint32).data(32).b,
		// The largest array the file can hold: 1 MiB of bools.
		"bools": append(start(0, 1).str("k").u32(uint32(typeArray)).u32(uint32(typeBool)).u64(1<<20).b, make([]byte, 1<<20)...),
	} {
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".gguf")
		if err := os.WriteFile(path, file, 0o644); err != nil {
			t.Fatal(err)
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		f, err := Open(path)
		runtime.ReadMemStats(&after)
		if f != nil {
			f.Close()
		}
		if name != "bools" && err == nil {
			t.Errorf("%s: no error", name)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 4<<20 {
			t.Errorf("%s: Open allocated %d bytes", name, got)
		} else {
			t.Logf("%s: %d bytes allocated (%v)", name, got, err)
		}
	}
}

// TestOpenNotRegular: a directory (or a pipe, a device) is refused before
// it is read.
func TestOpenNotRegular(t *testing.T) {
	dir := t.TempDir()
	_, err := Open(dir)
	var fe *FormatError
	if !errors.As(err, &fe) || fe.Field != "file" || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("got %v", err)
	}
	if _, err := Open(filepath.Join(dir, "missing.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
}
