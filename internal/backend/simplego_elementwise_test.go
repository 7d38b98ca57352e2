package backend

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// fastBackend returns the go backend with the element-wise hook in place.
func fastBackend(t testing.TB) *simplego.Backend {
	t.Helper()
	if strings.EqualFold(os.Getenv(FastOpsEnvVar), "off") {
		t.Skipf("%s=off", FastOpsEnvVar)
	}
	t.Setenv(EnvVar, "")
	b, err := New("go")
	if err != nil {
		t.Fatal(err)
	}
	if err := FastElementwise(); err != nil {
		t.Fatalf("element-wise hook not active: %v", err)
	}
	return b.(*simplego.Backend)
}

// fakeNode is a SimpleGo node with only opType, shape and data set (the
// fields executors read), found with reflect independently of the hook.
func fakeNode(op backends.OpType, s shapes.Shape, data any) *simplego.Node {
	n := new(simplego.Node)
	v := reflect.ValueOf(n).Elem()
	set := func(name string, x any) {
		f := v.FieldByName(name)
		reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem().Set(reflect.ValueOf(&x).Elem().Elem())
	}
	set("opType", op)
	set("shape", s)
	if data != nil {
		set("data", data)
	}
	return n
}

func f32Buffer(t testing.TB, b *simplego.Backend, data []float32, dims []int) *simplego.Buffer {
	t.Helper()
	buf, err := b.BufferFromFlatData(0, slices.Clone(data), shapes.Make(dtypes.Float32, dims...))
	if err != nil {
		t.Fatal(err)
	}
	return buf.(*simplego.Buffer)
}

func bufferFlat(t testing.TB, b *simplego.Backend, buf *simplego.Buffer) []float32 {
	t.Helper()
	flat, err := b.BufferData(buf)
	if err != nil {
		t.Fatal(err)
	}
	return flat.([]float32)
}

// sameBits compares exactly, treating any two NaNs as equal.
func sameBits(t *testing.T, got, want []float32) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d elements, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if math.Float32bits(g) != math.Float32bits(w) && !(g != g && w != w) {
			t.Fatalf("element %d = %g, want %g", i, g, w)
		}
	}
}

func size(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// unflat returns the multi-index of flat index f in dims (row-major).
func unflat(dims []int, f int) []int {
	idx := make([]int, len(dims))
	for ax := len(dims) - 1; ax >= 0; ax-- {
		idx[ax] = f % dims[ax]
		f /= dims[ax]
	}
	return idx
}

// flatOf is the flat index of idx in dims, with axes of size 1 pinned to 0
// (broadcasting).
func flatOf(dims, idx []int) int {
	f := 0
	for ax, d := range dims {
		i := idx[ax]
		if d == 1 {
			i = 0
		}
		f = f*d + i
	}
	return f
}

var refOps = map[binOp]func(a, b float32) float32{
	opAdd: func(a, b float32) float32 { return a + b },
	opSub: func(a, b float32) float32 { return a - b },
	opMul: func(a, b float32) float32 { return a * b },
	opDiv: func(a, b float32) float32 { return a / b },
	opMax: func(a, b float32) float32 { return max(a, b) },
	opMin: func(a, b float32) float32 { return min(a, b) },
	opPow: func(a, b float32) float32 { return float32(math.Pow(float64(a), float64(b))) },
}

// refBinary is the naive broadcasting reference.
func refBinary(op binOp, ld, rd []int, l, r []float32) (out []float32, od []int) {
	od = make([]int, len(ld))
	for ax := range od {
		od[ax] = max(ld[ax], rd[ax])
	}
	out = make([]float32, size(od))
	for f := range out {
		idx := unflat(od, f)
		out[f] = refOps[op](l[flatOf(ld, idx)], r[flatOf(rd, idx)])
	}
	return out, od
}

type binCase struct{ ld, rd []int }

// binaryCases lists hand-picked broadcast patterns and random ones.
func binaryCases(r *rand.Rand) []binCase {
	cs := []binCase{
		{[]int{3, 1, 5}, []int{1, 4, 1}},             // both broadcast, alternating
		{[]int{16, 11, 64}, []int{16, 11, 1}},        // trailing
		{[]int{1, 7}, []int{5, 7}},                   // leading
		{[]int{4, 1, 6}, []int{4, 3, 6}},             // middle
		{[]int{2, 1, 1, 3}, []int{1, 5, 7, 1}},       // merged groups
		{[]int{2, 3, 1, 1, 5}, []int{2, 3, 4, 6, 5}}, // two middle axes merge
		{[]int{1, 9}, []int{9, 1}},                   // outer product
		{[]int{5, 2}, []int{5, 1}},                   // short inner run
	}
	dimChoices := []int{1, 2, 3, 4, 5, 7, 11}
	for len(cs) < 200 {
		rank := 1 + r.IntN(5)
		ld, rd := make([]int, rank), make([]int, rank)
		for ax := range rank {
			d := dimChoices[r.IntN(len(dimChoices))]
			ld[ax], rd[ax] = d, d
			switch r.IntN(4) {
			case 0:
				ld[ax] = 1
			case 1:
				rd[ax] = 1
			}
		}
		if slices.Equal(ld, rd) || size(ld) == 1 || size(rd) == 1 {
			continue // SimpleGo's own cases
		}
		cs = append(cs, binCase{ld, rd})
	}
	return cs
}

func randomF32(r *rand.Rand, n int, positive bool) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64())
		if positive {
			v[i] = 0.1 + float32(math.Abs(float64(v[i])))
		}
	}
	return v
}

// TestBroadcastBinaryExecutor calls the hooked executors directly with
// every op, every case and every combination of owned inputs, and checks
// the result bit for bit, the buffer-reuse protocol and that non-owned
// inputs are left alone.
func TestBroadcastBinaryExecutor(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range binaryCases(r) {
		for op := opAdd; op <= opPow; op++ {
			l := randomF32(r, size(c.ld), op == opPow)
			rr := randomF32(r, size(c.rd), false)
			want, od := refBinary(op, c.ld, c.rd, l, rr)
			for owned := range 4 {
				name := fmt.Sprintf("%v/%v%v/owned%02b", binOpTypes[op], c.ld, c.rd, owned)
				lb, rb := f32Buffer(t, b, l, c.ld), f32Buffer(t, b, rr, c.rd)
				inputs := []*simplego.Buffer{lb, rb}
				own := []bool{owned&1 != 0, owned&2 != 0}
				calls := fastOpsCalls.Load()
				out, err := fastOps[binOpTypes[op]](b, fakeNode(binOpTypes[op], shapes.Make(dtypes.Float32, od...), nil), inputs, own)
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if fastOpsCalls.Load() == calls {
					t.Fatalf("%s: hook stepped aside", name)
				}
				t.Run(name, func(t *testing.T) { sameBits(t, bufferFlat(t, b, out), want) })
				checkReuse(t, b, name, own, c.ld, c.rd, od, inputs, lb, rb, out, l, rr)
			}
		}
	}
}

func TestCollapseBinary(t *testing.T) {
	for _, tc := range []struct {
		ld, rd []int
		want   []bAxis
		ok     bool
	}{
		{[]int{16, 11, 64}, []int{16, 11, 1}, []bAxis{{176, 64, 1, 64}, {64, 1, 0, 1}}, true},
		{[]int{3, 1, 5}, []int{1, 4, 1}, []bAxis{{3, 5, 0, 20}, {4, 0, 1, 5}, {5, 1, 0, 1}}, true},
		{[]int{2, 1, 3}, []int{2, 5, 3}, []bAxis{{2, 3, 15, 15}, {5, 0, 3, 3}, {3, 1, 1, 1}}, true},
		{[]int{2, 3}, []int{2, 4}, nil, false}, // not broadcastable
		{[]int{2, 3}, []int{3}, nil, false},    // rank mismatch
	} {
		od := make([]int, len(tc.ld))
		for i := range od {
			od[i] = max(tc.ld[i], tc.rd[min(i, len(tc.rd)-1)])
		}
		got, ok := collapseBinary(tc.ld, tc.rd, od)
		if ok != tc.ok || (ok && !slices.Equal(got, tc.want)) {
			t.Errorf("collapseBinary(%v, %v) = %v, %v; want %v, %v", tc.ld, tc.rd, got, ok, tc.want, tc.ok)
		}
	}
}

// TestBroadcastInDimExecutor checks BroadcastInDim over random operand
// shapes and broadcast axes (single-element operands, fills, included)
// against the naive reference.
func TestBroadcastInDimExecutor(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(5, 6))
	dimChoices := []int{1, 2, 3, 5, 8}
	for range 300 {
		rank := 1 + r.IntN(5)
		od := make([]int, rank)
		var bAxes, xd []int
		for ax := range od {
			od[ax] = dimChoices[r.IntN(len(dimChoices))]
			if r.IntN(2) == 0 {
				bAxes = append(bAxes, ax)
				if r.IntN(4) == 0 {
					xd = append(xd, 1) // size-1 operand axis, broadcast too
				} else {
					xd = append(xd, od[ax])
				}
			}
		}
		x := randomF32(r, size(xd), false)
		full := make([]int, rank) // operand dims on output axes
		for i := range full {
			full[i] = 1
		}
		for i, ax := range bAxes {
			full[ax] = xd[i]
		}
		want := make([]float32, size(od))
		for f := range want {
			want[f] = x[flatOf(full, unflat(od, f))]
		}
		calls := fastOpsCalls.Load()
		out, err := broadcastInDimExec(b, fakeNode(backends.OpTypeBroadcastInDim, shapes.Make(dtypes.Float32, od...), bAxes),
			[]*simplego.Buffer{f32Buffer(t, b, x, xd)}, []bool{true})
		if err != nil || fastOpsCalls.Load() == calls {
			t.Fatalf("%v->%v axes %v: err=%v, hook ran: %v", xd, od, bAxes, err, fastOpsCalls.Load() != calls)
		}
		t.Run(fmt.Sprintf("%v->%v@%v", xd, od, bAxes), func(t *testing.T) { sameBits(t, bufferFlat(t, b, out), want) })
	}
}

// TestBroadcastEqualExecutor checks Equal on int32 and float32 operands
// drawn from a few values, so that both outcomes occur.
func TestBroadcastEqualExecutor(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(3, 3))
	for _, c := range binaryCases(r) {
		l, rr := make([]int32, size(c.ld)), make([]int32, size(c.rd))
		for i := range l {
			l[i] = r.Int32N(3)
		}
		for i := range rr {
			rr[i] = r.Int32N(3)
		}
		od := make([]int, len(c.ld))
		for ax := range od {
			od[ax] = max(c.ld[ax], c.rd[ax])
		}
		want := make([]bool, size(od))
		for f := range want {
			idx := unflat(od, f)
			want[f] = l[flatOf(c.ld, idx)] == rr[flatOf(c.rd, idx)]
		}
		lf, rf := make([]float32, len(l)), make([]float32, len(rr))
		for i, v := range l {
			lf[i] = float32(v)
		}
		for i, v := range rr {
			rf[i] = float32(v)
		}
		for _, in := range [][2]any{{l, rr}, {lf, rf}} {
			var bufs []*simplego.Buffer
			for i, dims := range [][]int{c.ld, c.rd} {
				dt := dtypes.FromGoType(reflect.TypeOf(in[i]).Elem())
				buf, err := b.BufferFromFlatData(0, in[i], shapes.Make(dt, dims...))
				if err != nil {
					t.Fatal(err)
				}
				bufs = append(bufs, buf.(*simplego.Buffer))
			}
			calls := fastOpsCalls.Load()
			out, err := equalExec(b, fakeNode(backends.OpTypeEqual, shapes.Make(dtypes.Bool, od...), nil), bufs, []bool{true, true})
			if err != nil || fastOpsCalls.Load() == calls {
				t.Fatalf("%v==%v: err=%v, hook ran: %v", c.ld, c.rd, err, fastOpsCalls.Load() != calls)
			}
			flat, _ := b.BufferData(out)
			if got := flat.([]bool); !slices.Equal(got, want) {
				t.Fatalf("%T %v==%v: got %v, want %v", in[0], c.ld, c.rd, got, want)
			}
		}
	}
}

// checkReuse checks SimpleGo's buffer-reuse protocol after a binary op:
// an owned input of the output's shape (the right one first) becomes the
// output and its inputs entry is nil; any input not reused is untouched
// (still holds l or r).
func checkReuse(t *testing.T, b *simplego.Backend, name string, own []bool, ld, rd, od []int,
	inputs []*simplego.Buffer, lb, rb, out *simplego.Buffer, l, r []float32) {
	t.Helper()
	reuseR := own[1] && slices.Equal(rd, od)
	reuseL := !reuseR && own[0] && slices.Equal(ld, od)
	switch {
	case reuseR && (out != rb || inputs[1] != nil || inputs[0] != lb):
		t.Fatalf("%s: owned rhs not reused per protocol", name)
	case reuseL && (out != lb || inputs[0] != nil || inputs[1] != rb):
		t.Fatalf("%s: owned lhs not reused per protocol", name)
	case !reuseR && !reuseL && (out == lb || out == rb || inputs[0] != lb || inputs[1] != rb):
		t.Fatalf("%s: wrote into an input it may not reuse", name)
	}
	if !reuseL {
		sameBits(t, bufferFlat(t, b, lb), l)
	}
	if !reuseR {
		sameBits(t, bufferFlat(t, b, rb), r)
	}
}

// TestConvertBoolExecutor checks bool → float32 against SimpleGo's own
// conversion, below and above the size that splits it over the cores, and
// that other conversions are left to SimpleGo.
func TestConvertBoolExecutor(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(5, 5))
	stock := fastOpsStock[backends.OpTypeConvertDType]
	for _, dims := range [][]int{{7}, {3, 40000}} {
		in := make([]bool, size(dims))
		for i := range in {
			in[i] = r.IntN(5) == 0
		}
		buf := func() *simplego.Buffer {
			x, err := b.BufferFromFlatData(0, slices.Clone(in), shapes.Make(dtypes.Bool, dims...))
			if err != nil {
				t.Fatal(err)
			}
			return x.(*simplego.Buffer)
		}
		node := fakeNode(backends.OpTypeConvertDType, shapes.Make(dtypes.Float32, dims...), nil)
		want, err := stock(b, node, []*simplego.Buffer{buf()}, []bool{false})
		if err != nil {
			t.Fatal(err)
		}
		calls := fastOpsCalls.Load()
		out, err := convertBoolExec(b, node, []*simplego.Buffer{buf()}, []bool{true})
		if err != nil || fastOpsCalls.Load() == calls {
			t.Fatalf("%v: err=%v, hook ran: %v", dims, err, fastOpsCalls.Load() != calls)
		}
		sameBits(t, bufferFlat(t, b, out), bufferFlat(t, b, want))
	}
	ints, err := b.BufferFromFlatData(0, []int32{1, 0, 3}, shapes.Make(dtypes.Int32, 3))
	if err != nil {
		t.Fatal(err)
	}
	calls := fastOpsCalls.Load()
	out, err := convertBoolExec(b, fakeNode(backends.OpTypeConvertDType, shapes.Make(dtypes.Float32, 3), nil), []*simplego.Buffer{ints.(*simplego.Buffer)}, []bool{false})
	if err != nil || fastOpsCalls.Load() != calls {
		t.Fatalf("int32 → float32: err=%v, hook ran: %v", err, fastOpsCalls.Load() != calls)
	}
	if got := bufferFlat(t, b, out); !slices.Equal(got, []float32{1, 0, 3}) {
		t.Errorf("int32 → float32 = %v", got)
	}
}

// TestSliceExecutor checks unit-stride slices against SimpleGo's own, for
// float32, int32 and bool, below and above the size that splits the copy
// over the cores, and that strided slices are left to SimpleGo.
func TestSliceExecutor(t *testing.T) {
	b := fastBackend(t)
	r := rand.New(rand.NewPCG(6, 6))
	stock := fastOpsStock[backends.OpTypeSlice]
	type params struct{ starts, limits, strides []int }
	run := func(exec nodeExecutor, in any, dims []int, p params) ([]byte, bool) {
		t.Helper()
		dt := dtypes.FromGoType(reflect.TypeOf(in).Elem())
		buf, err := b.BufferFromFlatData(0, in, shapes.Make(dt, dims...))
		if err != nil {
			t.Fatal(err)
		}
		od := make([]int, len(dims))
		for a := range od {
			od[a] = (p.limits[a] - p.starts[a] + p.strides[a] - 1) / p.strides[a]
		}
		// A real Slice node (its parameters are SimpleGo's own struct).
		bld := b.Builder("slice")
		x, err := bld.Parameter("x", shapes.Make(dt, dims...), nil)
		if err != nil {
			t.Fatal(err)
		}
		op, err := bld.Slice(x, p.starts, p.limits, p.strides)
		if err != nil {
			t.Fatal(err)
		}
		node := op.(*simplego.Node)
		if !nodeShape(node).Equal(shapes.Make(dt, od...)) {
			t.Fatalf("slice node shape %v, want %v", nodeShape(node), od)
		}
		calls := fastOpsCalls.Load()
		out, err := exec(b, node, []*simplego.Buffer{buf.(*simplego.Buffer)}, []bool{false})
		if err != nil {
			t.Fatal(err)
		}
		flat, _ := b.BufferData(out)
		v := reflect.ValueOf(flat)
		bytes := unsafe.Slice((*byte)(v.UnsafePointer()), v.Len()*int(v.Type().Elem().Size()))
		return slices.Clone(bytes), fastOpsCalls.Load() != calls
	}
	for i := range 40 {
		rank := 1 + i%4
		dims := make([]int, rank)
		p := params{make([]int, rank), make([]int, rank), make([]int, rank)}
		for a := range dims {
			dims[a] = 1 + r.IntN(9)
			if i%5 == 0 && a == rank-1 {
				dims[a] = 5000 // large enough to split
			}
			p.starts[a] = r.IntN(dims[a])
			p.limits[a] = p.starts[a] + 1 + r.IntN(dims[a]-p.starts[a])
			if r.IntN(3) == 0 {
				p.starts[a], p.limits[a] = 0, dims[a] // a whole axis
			}
			p.strides[a] = 1
		}
		n := size(dims)
		f, ints, bools := make([]float32, n), make([]int32, n), make([]bool, n)
		for j := range n {
			f[j], ints[j], bools[j] = float32(r.NormFloat64()), r.Int32(), r.IntN(2) == 0
		}
		for _, in := range []any{f, ints, bools} {
			want, _ := run(stock, in, dims, p)
			got, hook := run(sliceExec, in, dims, p)
			if !hook || !slices.Equal(got, want) {
				t.Fatalf("%T %v [%v:%v]: hook ran %v, same bytes %v", in, dims, p.starts, p.limits, hook, slices.Equal(got, want))
			}
		}
	}
	p := params{[]int{0, 1}, []int{4, 7}, []int{1, 2}}
	in := make([]float32, 4*7)
	for j := range in {
		in[j] = float32(j)
	}
	want, _ := run(stock, in, []int{4, 7}, p)
	got, hook := run(sliceExec, in, []int{4, 7}, p)
	if hook || !slices.Equal(got, want) {
		t.Errorf("strided slice: hook ran %v, same bytes %v", hook, slices.Equal(got, want))
	}
}
