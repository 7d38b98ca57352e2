package backend

import (
	"reflect"
	"slices"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// scatterRowsExec runs ScatterSum of whole rows: operand [R, W] float32,
// indices [n, 1] int32 (row numbers), updates [n, W], as KV-cache writes
// are built (model/forms.go). SimpleGo's generic scatter walks every
// element with an index iterator (about 10 CPU ms per decode step at
// batch 32); this adds each update row to its operand row in index order,
// the same sums bit for bit. Out-of-range rows are skipped (XLA's rule).
// Any other scatter goes to SimpleGo's executor.
func scatterRowsExec(b *simplego.Backend, node *simplego.Node, inputs []*simplego.Buffer, owned []bool) (*simplego.Buffer, error) {
	stock := fastOpsStock[backends.OpTypeScatterSum]
	if len(inputs) != 3 || len(owned) != 3 || fastOpsErr.Load() != nil || !rowScatter(nodeData(node)) {
		return stock(b, node, inputs, owned)
	}
	oShape, o, okO := f32Input(b, inputs, 0)
	is, err := b.BufferShape(inputs[1])
	iflat, err2 := b.BufferData(inputs[1])
	idx, okI := iflat.([]int32)
	us, u, okU := f32Input(b, inputs, 2)
	if !okO || !okU || !okI || err != nil || err2 != nil || oShape.Rank() != 2 || is.DType != dtypes.Int32 || is.Rank() != 2 ||
		is.Dimensions[1] != 1 || us.Rank() != 2 || us.Dimensions[0] != is.Dimensions[0] || us.Dimensions[1] != oShape.Dimensions[1] ||
		!nodeShape(node).Equal(oShape) {
		return stock(b, node, inputs, owned)
	}
	out := inputs[0]
	if owned[0] {
		inputs[0] = nil // reused in place, as SimpleGo's execScatter
	} else {
		var dst []float32
		var ok bool
		if out, dst, ok = f32Output(b, oShape); !ok {
			return stock(b, node, inputs, owned)
		}
		copy(dst, o)
		o = dst
	}
	R, W := oShape.Dimensions[0], oShape.Dimensions[1]
	for i, r := range idx {
		if r < 0 || int(r) >= R {
			continue
		}
		row, up := o[int(r)*W:(int(r)+1)*W], u[i*W:(i+1)*W]
		for j, x := range up {
			row[j] += x
		}
	}
	fastOpsCalls.Add(1)
	return out, nil
}

// rowScatter reports whether SimpleGo's scatter parameters (an unexported
// struct, read by reflection) describe a scatter of whole rows along axis
// 0: index vector axis 1, update window axis 1, inserted window axis 0,
// scatter axis 0.
func rowScatter(data any) bool {
	v := reflect.ValueOf(data)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return false
	}
	s := v.Elem()
	axis := s.FieldByName("indexVectorAxis")
	if !axis.IsValid() || axis.Kind() != reflect.Int || axis.Int() != 1 {
		return false
	}
	uw, ok1 := intsField(s, "updateWindowAxes")
	iw, ok2 := intsField(s, "insertedWindowAxes")
	sa, ok3 := intsField(s, "scatterAxesToOperandAxes")
	return ok1 && ok2 && ok3 && slices.Equal(uw, []int{1}) && slices.Equal(iw, []int{0}) && slices.Equal(sa, []int{0})
}

// intsField returns the []int field name of struct s (SimpleGo's node
// parameters, unexported, read by reflection); false if there is none.
func intsField(s reflect.Value, name string) ([]int, bool) {
	f := s.FieldByName(name)
	if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Int {
		return nil, false
	}
	out := make([]int, f.Len())
	for i := range out {
		out[i] = int(f.Index(i).Int())
	}
	return out, true
}
