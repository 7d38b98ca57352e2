package vjp

import "github.com/gomlx/gomlx/pkg/core/graph"

// stockForTest is gomlx's own DotGeneral gradient, the reference.
var stockForTest = graph.VJPRegistration[graph.NodeTypeDotGeneral]
