package backend

// SimpleGo's parallel op execution ("go:ops_parallel", or its default
// "dynamic" mode when one program runs at a time) hands each ready op to
// a worker pool of 2·NumCPU goroutines and waits for a free slot before
// it starts the next. Some of SimpleGo's own executors (DotGeneral of
// dtypes other than float32, Erf) split their work over the same pool and
// wait for slots from inside a worker: once every slot holds such an op,
// none can start its parts and the program hangs (seen on 2 cores with a
// few DotGenerals side by side). With an unlimited pool (SimpleGo's
// parallelism=-1) a task always starts on a goroutine of its own, so no
// worker ever waits for a slot. New sets it for every "go" configuration
// that does not give parallelism=N itself; SimpleGo's own option for it
// prints a line to stdout, hence the direct write below.
//
// grpokit's hooks (gemm, element-wise, fused ops) never use the pool:
// they split work over plain goroutines of their own.

import (
	"errors"
	"reflect"
	"strings"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
)

// givesParallelism reports whether a "go" configuration sets the worker
// pool's size itself.
func givesParallelism(config string) bool {
	_, opts, _ := strings.Cut(config, ":")
	for _, o := range strings.Split(opts, ",") {
		if k, _, _ := strings.Cut(o, "="); strings.TrimSpace(k) == "parallelism" {
			return true
		}
	}
	return false
}

// unlimitWorkers sets b's worker pool to unlimited (SimpleGo's
// parallelism=-1). It checks the fields it writes with reflect and fails,
// changing nothing, if the pinned gomlx's layout differs.
func unlimitWorkers(b backends.Backend) error {
	p, err := maxParallelism(b)
	if err != nil {
		return err
	}
	*p = -1
	return nil
}

// workersUnlimited reports whether b's pool is unlimited (tests).
func workersUnlimited(b backends.Backend) bool {
	p, err := maxParallelism(b)
	return err == nil && *p == -1
}

// maxParallelism points at the size of b's SimpleGo worker pool, after
// checking with reflect that the fields are where the pinned gomlx has
// them.
func maxParallelism(b backends.Backend) (*int, error) {
	sb, ok := b.(*simplego.Backend)
	if !ok {
		return nil, errors.New("backend: not a SimpleGo backend")
	}
	w, ok := reflect.TypeFor[simplego.Backend]().FieldByName("workers")
	if !ok || w.Type.Kind() != reflect.Struct {
		return nil, errors.New("backend: simplego.Backend has no workers pool")
	}
	mp, ok := w.Type.FieldByName("maxParallelism")
	if !ok || mp.Type.Kind() != reflect.Int {
		return nil, errors.New("backend: SimpleGo's workers pool has no `maxParallelism int`")
	}
	return (*int)(unsafe.Add(unsafe.Pointer(sb), w.Offset+mp.Offset)), nil
}
