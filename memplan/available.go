package memplan

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// LimitEnv is the environment variable the grpokit command and the
// examples read (BudgetFromEnv) for how much memory a run may use,
// overriding what Available detects: a size ("16GB", "12GiB", "800MB", or
// bytes), or "off" to print the memory plan without stopping a run that
// exceeds it. No library call reads it.
const LimitEnv = "GRPOKIT_MEMORY_LIMIT"

// Budget is the memory a run may use, and where that figure comes from.
type Budget struct {
	// Bytes is the memory the process may grow to; 0 when nothing is
	// known (not Linux).
	Bytes int64
	// Source names where Bytes comes from ("MemAvailable", "cgroup memory
	// limit", "GRPOKIT_MEMORY_LIMIT", a flag); it is printed with the plan.
	Source string
	// Off prints the memory plan without stopping a run that exceeds it.
	Off bool
}

// Files Available reads; tests point them elsewhere.
var (
	meminfoFile    = "/proc/meminfo"
	selfStatusFile = "/proc/self/status"
	cgroupFiles    = [][2]string{ // limit, usage: cgroup v2, then v1
		{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"},
		{"/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"},
	}
)

// Available returns the memory this process may grow to: the smaller of
// MemAvailable (/proc/meminfo) and the cgroup's limit less its usage, each
// plus what the process already holds (its RSS: a model loaded before the
// check counts in the plan, not against it). Bytes is 0 when nothing is
// known (not Linux). It reads no environment variable (see BudgetFromEnv).
func Available() Budget {
	var b Budget
	rss := readKB(selfStatusFile, "VmRSS:")
	if avail := readKB(meminfoFile, "MemAvailable:"); avail > 0 {
		b = Budget{Bytes: avail + rss, Source: "MemAvailable"}
	}
	for _, f := range cgroupFiles {
		limit, ok1 := readInt(f[0])
		usage, ok2 := readInt(f[1])
		if !ok1 || !ok2 || limit <= 0 || limit >= 1<<60 {
			continue // absent, or "max"
		}
		if c := limit - usage + rss; b.Bytes == 0 || c < b.Bytes {
			b = Budget{Bytes: c, Source: "cgroup memory limit"}
		}
		break
	}
	return b
}

// ParseLimit reads a memory limit as GRPOKIT_MEMORY_LIMIT or a flag gives
// it: a size (see ParseSize), or "off" for a budget that prints the plan
// without stopping a run. source names where s comes from; an empty s is
// Available().
func ParseLimit(s, source string) (Budget, error) {
	v := strings.TrimSpace(s)
	switch {
	case v == "":
		return Available(), nil
	case strings.EqualFold(v, "off"):
		return Budget{Source: source + "=off", Off: true}, nil
	}
	n, err := ParseSize(v)
	if err != nil {
		return Budget{}, fmt.Errorf("memplan: %s: %w", source, err)
	}
	return Budget{Bytes: n, Source: source}, nil
}

// BudgetFromEnv returns the budget GRPOKIT_MEMORY_LIMIT sets, or
// Available() when it is unset: what the grpokit command and the examples
// check a run's memory plan against. A malformed value is an error naming
// the variable.
func BudgetFromEnv() (Budget, error) {
	return ParseLimit(os.Getenv(LimitEnv), LimitEnv)
}

// ParseSize reads a size: bytes, or a number with kB/KB, MB, GB, TB
// (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024); "G" and "M"
// alone are GiB and MiB, as in GOMEMLIMIT.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	units := []struct {
		suffix string
		mult   float64
	}{
		{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
		{"kB", 1e3}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
		{"K", 1 << 10}, {"M", 1 << 20}, {"G", 1 << 30}, {"T", 1 << 40}, {"B", 1},
	}
	mult := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, mult = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || v <= 0 || v*mult >= 1<<62 {
		return 0, fmt.Errorf("memory size %q: want a positive size such as 16GB, 12GiB or 800MB", s)
	}
	return int64(v * mult), nil
}

// readKB returns the value of key (in kB) in a /proc file, in bytes; 0
// when absent.
func readKB(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	return scanKB(f, key)
}

func scanKB(r io.Reader, key string) int64 {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, key); ok {
			fields := strings.Fields(rest)
			if len(fields) == 0 {
				return 0
			}
			n, err := strconv.ParseInt(fields[0], 10, 64)
			if err != nil {
				return 0
			}
			return n << 10
		}
	}
	return 0
}

func readInt(path string) (int64, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n, err == nil
}
