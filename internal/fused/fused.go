// Package fused builds a decoder's element-wise chains (SwiGLU, the
// attention's masked softmax, RMSNorm, RoPE) as one graph node each, with
// a gradient that is again one or two nodes, for the pure-Go backend.
//
// On SimpleGo every graph op is a full pass over its tensors: RMSNorm's
// Square, mean, Sqrt, Div and Mul, and their gradients, read and write
// the activations a dozen times. Here each chain is an ordinary Mul or
// Where node whose SimpleGo node is marked (backend.MarkFused) so that it
// runs the whole chain row by row in one pass, and whose gradient is set
// on the graph node itself (GoMLX's custom VJP, the mechanism of
// graph.IdentityWithCustomGradient).
//
// The forward values are the plain chain's bit for bit (the backend
// repeats its float32 operations in order); the gradients are the
// analytic derivatives, equal to the plain chain's up to float32
// rounding. Use Available to choose: on other backends (XLA, which fuses
// by itself) build the plain chain. Second derivatives of a fused node
// are not supported (building one panics).
package fused

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"sync"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math, as GoMLX's layers.
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/grpokit/grpokit/internal/backend"
)

var (
	vjpOnce sync.Once
	vjpOff  uintptr // offset of graph.Node.customVJP; 0 when not found
)

// EnvVar turns fused chains off when set to "off" (for A/B runs): models
// then build the plain chains.
const EnvVar = "GRPOKIT_FUSED"

// Available reports whether graphs on b can use this package's nodes: b
// is the "go" backend with grpokit's hooks, GoMLX's Node is as this
// package knows it, and GRPOKIT_FUSED is not "off". The nodes are float32.
func Available(b backends.Backend) bool {
	return findVJP() && backend.FusedOps(b)
}

// findVJP finds the offset of graph.Node.customVJP once; false when it is
// not there (or fusing is off).
func findVJP() bool {
	vjpOnce.Do(func() {
		f, ok := reflect.TypeFor[Node]().FieldByName("customVJP")
		if ok && f.Type == reflect.TypeFor[VJP]() && !strings.EqualFold(os.Getenv(EnvVar), "off") {
			vjpOff = f.Offset
		}
	})
	return vjpOff != 0
}

// setVJP gives n the gradient vjp.
func setVJP(n *Node, vjp VJP) {
	if !findVJP() {
		panic("fused: fused nodes are not available (see Available)")
	}
	*(*VJP)(unsafe.Add(unsafe.Pointer(n), vjpOff)) = vjp
}

// noSecondOrder is the gradient of the gradient nodes.
func noSecondOrder(n *Node, _ []*Node, _ shapes.Shape) []*Node {
	panic(fmt.Sprintf("fused: no second derivative of the fused node %s", n))
}

// mark makes n the fused chain k, with gradient vjp (nil: a gradient
// node, which has none).
func mark(n *Node, k backend.FusedKind, p backend.FusedParams, vjp VJP) *Node {
	if n.DType() != dtypes.Float32 {
		panic(fmt.Sprintf("fused: chain %d on %s: float32 only", k, n.Shape()))
	}
	backend.MarkFused(n, k, p)
	if vjp == nil {
		vjp = noSecondOrder
	}
	setVJP(n, vjp)
	return n
}

// SwiGLU returns silu(gate)·up = gate·σ(gate)·up (same shapes).
func SwiGLU(gate, up *Node) *Node {
	return mark(Mul(gate, up), backend.FusedSwiGLU, backend.FusedParams{}, func(n *Node, v []*Node, _ shapes.Shape) []*Node {
		g, u := n.Inputs()[0], n.Inputs()[1]
		dg := mark(Mul(Mul(v[0], u), g), backend.FusedSiLUGrad, backend.FusedParams{}, nil)
		du := mark(Mul(g, v[0]), backend.FusedSwiGLU, backend.FusedParams{}, nil)
		return []*Node{dg, du}
	})
}

// AttentionSoftmax returns softmax over the last axis of
// Where(mask, x·scale, fill): the attention's probabilities from raw
// scores x, with the bool mask (x's shape) of the keys each query sees.
func AttentionSoftmax(x, mask *Node, scale, fill float64) *Node {
	p := backend.FusedParams{Scale: float32(scale), Fill: float32(fill)}
	fillNode := Scalar(x.Graph(), x.DType(), fill)
	return mark(Where(mask, x, fillNode), backend.FusedSoftmax, p, func(n *Node, v []*Node, _ shapes.Shape) []*Node {
		dx := mark(Where(mask, n, v[0]), backend.FusedSoftmaxGrad, p, nil)
		return []*Node{nil, dx, nil}
	})
}

// RMSNorm returns x/√(mean(x²) + eps)·w over the last axis of x, for a
// weight w of shape [1, …, 1, H] (x's rank).
func RMSNorm(x, w *Node, eps float64) *Node {
	p := backend.FusedParams{Eps: float32(eps)}
	return mark(Mul(x, w), backend.FusedRMSNorm, p, func(n *Node, v []*Node, _ shapes.Shape) []*Node {
		dx := mark(Mul(x, Mul(v[0], w)), backend.FusedRMSNormGrad, p, nil)
		scaled := mark(Mul(x, v[0]), backend.FusedRMSNormScale, p, nil)
		axes := make([]int, x.Rank()-1)
		for i := range axes {
			axes[i] = i
		}
		dw := Reshape(ReduceSum(scaled, axes...), w.Shape().Dimensions...)
		return []*Node{dx, dw}
	})
}

// RoPE returns x·cos + rotate_half(x)·sin for x [..., heads, hd] and the
// table cs [..., 1, hd] that holds cos then sin of the hd/2 angles of
// each position (HF's rotate_half layout, where angles j and j + hd/2 are
// equal). The table gets no gradient.
func RoPE(x, cs *Node) *Node {
	return mark(Mul(x, cs), backend.FusedRoPE, backend.FusedParams{}, func(n *Node, v []*Node, _ shapes.Shape) []*Node {
		dx := mark(Mul(v[0], cs), backend.FusedRoPE, backend.FusedParams{Inverse: true}, nil)
		return []*Node{dx, nil}
	})
}
