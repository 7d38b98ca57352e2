// Command proffamilies sums a CPU profile of grpokit (bench/grpostep's
// -cpuprofile or -firstprofile, bench/model's -cpuprofile) by op family:
// matrix products, element-wise ops, reductions, transposes, data movement
// (gather, slice, concatenate, …), compilation, memory management and the
// rest. It reads the stacks that `go tool pprof -traces` prints, so it needs
// only the Go toolchain.
//
//	go run ./bench/proffamilies [-top 5] [-phase train] profile.out
//
// -phase keeps the samples of one part of a GRPO step (the trainer's pprof
// label grpokit=train or grpokit=generate; the runtime's GC workers carry
// no label, so their time is left out).
//
// A stack that passes through graph compilation (gomlx's
// Exec.createAndCacheGraph: building the graph, its gradient and the
// backend program) counts as compile; one inside a fused element-wise chain
// (internal/backend's simplego_fused.go) as element-wise unless its
// innermost frame is memory management; any other is classified by its
// innermost frame that names an op executor.
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// family is an op family and the frames that belong to it.
type family struct {
	name string
	re   *regexp.Regexp
}

// compile marks a stack that builds or compiles a graph.
var compile = regexp.MustCompile(`graph\.\(\*Exec\)\.createAndCacheGraph|simplego\.\(\*Builder\)\.Compile`)

// fusedChain marks a stack inside a fused element-wise chain (its row
// loops call reductions and copies that would otherwise name it).
var fusedChain = regexp.MustCompile(`internal/backend\.(runFused|withFused)`)

// The element-wise and memory families, which fused chains also use.
var (
	elementwise = family{"element-wise (incl. broadcast, fused chains)", regexp.MustCompile(`internal/vec32\.|binaryExec|broadcastBinary|flatBinary|binVec|binScalar|unaryExec|whereExec|equalExec|equalRuns|broadcastInDimExec|walkRuns|simplego\.exec(Add|Sub|Mul|Div|Max|Min|Pow|Exp|Log|Logistic|Tanh|Sqrt|Rsqrt|Neg|Abs|Sign|Where|Equal|NotEqual|Greater|Less|Logical|Broadcast|ConvertDType|Cos|Sin|Erf|Floor|Ceil|Round|IsFinite|Rem|Clz|Bitwise)`)}
	memory      = family{"memory (alloc, clear, GC)", regexp.MustCompile(`^runtime\.(mallocgc|memclr|memmove|gcBgMarkWorker|gcDrain|scanobject|bgsweep|bgscavenge|sweepone|madvise|sysUnused|pageFault)|^runtime\.gc|^runtime\.mark`)}
)

// families, tried on each frame from the innermost out; the first match
// names the stack's family.
var families = []family{
	{"gemm (matrix products)", regexp.MustCompile(`internal/gemm\.|dotGeneralGemm|simplego\.execDotGeneral|simplego\.execNormalizedDotGeneral|simplego\.dotGeneral`)},
	{"transpose", regexp.MustCompile(`transposeExec|simplego\.execTranspose`)},
	{"reductions", regexp.MustCompile(`reduceExec|reduceWalk|maxRun|minRun|simplego\.execReduce|simplego\.execArgMinMax`)},
	elementwise,
	{"data movement (gather, slice, concat, iota)", regexp.MustCompile(`simplego\.exec(Gather|Scatter|Slice|Concatenate|Iota|Reshape|Identity|Pad)`)},
	memory,
}

// sample is one stack of the profile with its CPU time.
type sample struct {
	d      time.Duration
	frames []string // innermost first
}

func main() {
	top := flag.Int("top", 5, "innermost functions to list under each family")
	phase := flag.String("phase", "", "keep only samples labelled grpokit=PHASE (train or generate)")
	flag.Parse()
	if flag.NArg() != 1 {
		log.Fatal("usage: proffamilies [-top n] [-phase train|generate] profile.out")
	}
	args := []string{"tool", "pprof", "-traces"}
	if *phase != "" {
		args = append(args, "-tagfocus", "grpokit="+*phase)
	}
	out, err := exec.Command("go", append(args, flag.Arg(0))...).Output()
	if err != nil {
		log.Fatalf("proffamilies: go tool pprof -traces %s: %v", flag.Arg(0), err)
	}
	samples, err := parseTraces(bytes.NewReader(out))
	if err != nil {
		log.Fatalf("proffamilies: %v", err)
	}
	byFamily := map[string]time.Duration{}
	leaves := map[string]map[string]time.Duration{}
	var total time.Duration
	for _, s := range samples {
		f := classify(s.frames)
		byFamily[f] += s.d
		if leaves[f] == nil {
			leaves[f] = map[string]time.Duration{}
		}
		leaves[f][s.frames[0]] += s.d
		total += s.d
	}
	names := make([]string, 0, len(byFamily))
	for f := range byFamily {
		names = append(names, f)
	}
	sort.Slice(names, func(i, j int) bool { return byFamily[names[i]] > byFamily[names[j]] })
	fmt.Printf("%s: %.1f CPU s in %d stacks\n\n", flag.Arg(0), total.Seconds(), len(samples))
	fmt.Printf("| %-44s | %8s | %6s |\n", "op family", "CPU s", "share")
	fmt.Printf("|%s|%s|%s|\n", strings.Repeat("-", 46), strings.Repeat("-", 10), strings.Repeat("-", 8))
	for _, f := range names {
		fmt.Printf("| %-44s | %8.2f | %5.1f%% |\n", f, byFamily[f].Seconds(), 100*float64(byFamily[f])/float64(total))
	}
	if *top > 0 {
		fmt.Println()
		for _, f := range names {
			fmt.Printf("%s:\n", f)
			type kv struct {
				k string
				v time.Duration
			}
			var fs []kv
			for k, v := range leaves[f] {
				fs = append(fs, kv{k, v})
			}
			sort.Slice(fs, func(i, j int) bool { return fs[i].v > fs[j].v })
			for _, e := range fs[:min(*top, len(fs))] {
				fmt.Printf("  %7.2f s  %s\n", e.v.Seconds(), e.k)
			}
		}
	}
}

// classify names the family of a stack (innermost frame first).
func classify(frames []string) string {
	for _, fr := range frames {
		if compile.MatchString(fr) {
			return "compile (graph building, gradient, backend program)"
		}
	}
	for _, fr := range frames {
		if fusedChain.MatchString(fr) {
			if memory.re.MatchString(frames[0]) {
				return memory.name
			}
			return elementwise.name
		}
	}
	for _, fr := range frames {
		for _, f := range families {
			if f.re.MatchString(fr) {
				return f.name
			}
		}
	}
	return "other"
}

// parseTraces reads `go tool pprof -traces` output: blocks separated by
// dashed lines, each starting with "<duration>   <innermost frame>" and
// continuing with one caller per line.
func parseTraces(r io.Reader) ([]sample, error) {
	var out []sample
	var cur *sample
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----------+") {
			cur = nil
			continue
		}
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.Contains(line, ": ") && cur == nil && !startsWithDuration(fields[0]) {
			continue // header lines (File:, Type:, …)
		}
		if cur == nil {
			if !startsWithDuration(fields[0]) || len(fields) < 2 {
				continue
			}
			d, err := parseDuration(fields[0])
			if err != nil {
				return nil, err
			}
			out = append(out, sample{d: d, frames: []string{fields[1]}})
			cur = &out[len(out)-1]
			continue
		}
		cur.frames = append(cur.frames, fields[0])
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no samples in the profile")
	}
	return out, nil
}

func startsWithDuration(s string) bool { return len(s) > 0 && (s[0] >= '0' && s[0] <= '9') }

// parseDuration reads pprof's sample values: "10ms", "1.20s", "500us".
func parseDuration(s string) (time.Duration, error) {
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	if v, err := strconv.ParseFloat(s, 64); err == nil {
		return time.Duration(v * float64(time.Second)), nil
	}
	return 0, fmt.Errorf("bad sample value %q", s)
}
