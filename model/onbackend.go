package model

import (
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// onBackend returns a tensor of data with dims, already in a buffer of
// backend b when b shares its buffers with Go (the pure-Go backend): one
// copy. A tensor from tensors.FromFlatDataAndDimensions is a copy too, and
// is copied again into a backend buffer the first time a graph uses it —
// for a model's weights, a second pass over hundreds of MB of fresh memory
// in the first training step. Elsewhere (XLA) it is
// tensors.FromFlatDataAndDimensions.
func onBackend[T dtypes.Supported](b backends.Backend, data []T, dims ...int) *tensors.Tensor {
	if b != nil && b.HasSharedBuffers() {
		buf, flat, err := b.NewSharedBuffer(0, shapes.Make(dtypes.FromGenericsType[T](), dims...))
		if err == nil {
			if dst, ok := flat.([]T); ok && len(dst) == len(data) {
				copy(dst, data)
				if t, err := tensors.FromBuffer(b, buf); err == nil {
					return t
				}
			}
			_ = b.BufferFinalize(buf)
		}
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}
