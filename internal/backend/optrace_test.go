package backend

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // graph builders read like math.
)

// TestOpTrace runs in a fresh process (EnableOpTrace must come before the
// first go backend, and other tests of this package make one): the ops of
// a small graph are recorded with sane times, only between Start and Stop.
func TestOpTrace(t *testing.T) {
	if os.Getenv("GRPOKIT_OPTRACE_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOpTrace$", "-test.count=1")
		cmd.Env = append(os.Environ(), "GRPOKIT_OPTRACE_CHILD=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	if err := EnableOpTrace(); err != nil {
		t.Fatal(err)
	}
	b := Must("go")
	if err := EnableOpTrace(); err == nil || !strings.Contains(err.Error(), "before the first go backend") {
		t.Errorf("EnableOpTrace after a go backend was made: err = %v, want one saying to enable it before the first go backend", err)
	}
	exec := MustNewExec(b, func(x *Node) *Node { return Exp(Dot(x, x)) })
	x := [][]float32{{1, 0}, {0, 1}}
	exec.MustExec(x) // untraced
	StartOpTrace()
	exec.MustExec(x)
	events := StopOpTrace()
	exec.MustExec(x) // untraced
	ops := map[string]int{}
	for _, e := range events {
		ops[e.Op]++
		if e.End.Before(e.Start) || e.CPUEnd < e.CPUStart || e.Elems != 4 {
			t.Errorf("event %+v: times out of order or elements != 4", e)
		}
	}
	if ops["DotGeneral"] != 1 || ops["Exp"] != 1 {
		t.Errorf("events %+v, want one DotGeneral and one Exp", events)
	}
}
