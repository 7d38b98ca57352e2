package loss_test

import (
	"testing"

	"github.com/grpokit/grpokit/internal/apicheck"
)

// TestAPIShowsGraphNode: exported declarations say graph.Node, never a
// bare Node from a dot import (go doc would show an unresolvable *Node).
func TestAPIShowsGraphNode(t *testing.T) { apicheck.NoBareNode(t, ".") }
