// Package fork runs the short parallel loops of the pure-Go backend (a
// decode step's weight products, an element-wise op split across cores)
// on helper goroutines that stay awake a little while after their work.
//
// A product in a decode step takes a few hundred microseconds. Starting a
// goroutine for each one and joining it costs little in Go, but the other
// core is asleep by then: the runtime wakes an OS thread for the new
// goroutine and, at the join, the caller's thread sleeps and is woken
// again, each a futex round trip that a virtual machine makes slower. On 2
// cores these wake-ups left a decode step's products using 1.3 of them.
// Here a helper that has finished a task spins (yielding to any runnable
// goroutine) for up to Linger, taking the next loop's tasks as soon as
// they are posted, and the caller spins briefly before it sleeps on the
// join.
//
// Every task runs exactly once, on the caller or a helper; the caller runs
// any task no helper has taken, so a loop never waits for a helper to
// start. Helpers exit after Linger without work: an idle process keeps no
// goroutines and burns no CPU.
package fork

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Linger is how long a helper without work spins before it exits, and how
// long the caller spins at the join before it sleeps.
const Linger = 200 * time.Microsecond

// loop is one call of Run: tasks 0..n-1 of f.
type loop struct {
	f    func(t int)
	n    int32
	next atomic.Int32 // the next task to hand out
	left atomic.Int32 // tasks not finished yet
	wg   sync.WaitGroup
}

// take runs the next task of l if one is left and reports whether it did.
func (l *loop) take() bool {
	t := l.next.Add(1) - 1
	if t >= l.n {
		return false
	}
	l.f(int(t))
	l.left.Add(-1)
	l.wg.Done()
	return true
}

// pool is the set of helpers. The board holds the loop posted last; loops
// posted at the same time by different goroutines overwrite each other
// there, and each caller runs what the helpers did not take.
type pool struct {
	board   atomic.Pointer[loop]
	helpers atomic.Int32 // live helpers
	idle    atomic.Int32 // helpers looking for work
}

// helpers is shared by every caller in the process: it holds no results,
// only goroutines that exit on their own after Linger without work.
var helpers pool

// Run calls f(0), …, f(n-1) concurrently on up to n goroutines, the
// caller's among them, and returns when all have returned. A panic in f
// on a helper crashes the process, as in a plain goroutine.
func Run(n int, f func(t int)) { helpers.run(n, f) }

func (p *pool) run(n int, f func(t int)) {
	if n <= 1 {
		if n == 1 {
			f(0)
		}
		return
	}
	l := &loop{f: f, n: int32(n)}
	l.left.Store(int32(n))
	l.wg.Add(n)
	p.board.Store(l)
	// Start helpers for the tasks the idle ones will not take, no more
	// helpers than other Ps: a spinner beyond that would only take a P's
	// turn from work.
	maxHelpers := int32(runtime.GOMAXPROCS(0) - 1)
	for want := int32(n-1) - p.idle.Load(); want > 0; want-- {
		h := p.helpers.Add(1)
		if h > maxHelpers {
			p.helpers.Add(-1)
			break
		}
		go p.help()
	}
	for l.take() {
	}
	p.board.CompareAndSwap(l, nil)
	// The others' tasks are running: wait for them, spinning first.
	if l.left.Load() > 0 {
		start := time.Now()
		for l.left.Load() > 0 && time.Since(start) < Linger {
			runtime.Gosched()
		}
		l.wg.Wait()
	}
}

// help takes tasks from the board until it has found none for Linger.
func (p *pool) help() {
	defer p.helpers.Add(-1)
	p.idle.Add(1)
	since := time.Now()
	for {
		if l := p.board.Load(); l != nil && l.next.Load() < l.n {
			p.idle.Add(-1)
			for l.take() {
			}
			p.idle.Add(1)
			since = time.Now()
			continue
		}
		if time.Since(since) >= Linger {
			p.idle.Add(-1)
			return
		}
		runtime.Gosched()
	}
}
