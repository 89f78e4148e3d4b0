package cli

import (
	"bufio"
	"io/fs"
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// GCPercent is the garbage collector's target keeper runs with unless GOGC
// is set: the heap may grow to five times what is live between two
// collections instead of twice. At 1,000 requests a second on two cores
// the collections were the intake's p99 (18.6 → 9.3 ms, and 311 → 453 MiB
// peak RSS for keeper dev's one process; docs/benchmarks.md, 2026-11-27).
// GOGC, or GOMEMLIMIT, overrides it.
const GCPercent = 400

// DefaultMemoryLimit is the soft memory limit keeper sets when neither
// GOMEMLIMIT nor a container (its cgroup) gives one: the collector runs
// harder as the heap nears it, so GCPercent's headroom never takes a
// process past about a gibibyte: the limit is Go's memory, and the binary's
// mapped pages (~190 MiB) and SQLite's caches come on top (at 768 MiB the
// bulk bench peaked at 1,069 MiB RSS, at 640 at 905; docs/production.md,
// Memory).
const DefaultMemoryLimit = 640 << 20

// cgroupShare is the share of a container's memory limit keeper's soft
// limit takes: the rest is for what the Go runtime does not count (stacks
// of threads in C, the kernel's page cache charged to the container).
const cgroupShare = 0.9

// MemoryLimit is the soft memory limit TuneGC chose and why.
type MemoryLimit struct {
	Bytes  int64
	Source string // "GOMEMLIMIT", "cgroup <file>" or "default"
}

// TuneGC sets GCPercent unless the environment sets GOGC, and a soft memory
// limit unless it sets GOMEMLIMIT: 90 % of the container's cgroup limit
// when there is one, DefaultMemoryLimit otherwise.
func TuneGC() MemoryLimit {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(GCPercent)
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		tuned = MemoryLimit{Bytes: debug.SetMemoryLimit(-1), Source: "GOMEMLIMIT"}
		return tuned
	}
	tuned = memoryLimit(os.DirFS("/"))
	debug.SetMemoryLimit(tuned.Bytes)
	return tuned
}

// tuned is what TuneGC set, for a node's start line.
var tuned MemoryLimit

// memoryLimit is the soft limit for a process whose /proc and /sys are
// root's: from the cgroup (v2, or v1's memory controller) it runs in, else
// the default.
func memoryLimit(root fs.FS) MemoryLimit {
	for _, file := range cgroupLimitFiles(root) {
		b, err := fs.ReadFile(root, file)
		if err != nil {
			continue
		}
		v := strings.TrimSpace(string(b))
		n, err := strconv.ParseInt(v, 10, 64)
		// "max" (v2) or a page-rounded MaxInt64 (v1): no limit here.
		if err != nil || n <= 0 || n >= math.MaxInt64/2 {
			continue
		}
		return MemoryLimit{Bytes: int64(float64(n) * cgroupShare), Source: "cgroup /" + file}
	}
	return MemoryLimit{Bytes: DefaultMemoryLimit, Source: "default"}
}

// cgroupLimitFiles are the files that may hold the process's memory limit,
// nearest first: its own cgroup's as /proc/self/cgroup names it, then the
// mount's root (inside a container's cgroup namespace, the same file).
func cgroupLimitFiles(root fs.FS) []string {
	var files []string
	f, err := root.Open("proc/self/cgroup")
	if err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			// hierarchy-ID:controller-list:cgroup-path
			parts := strings.SplitN(sc.Text(), ":", 3)
			if len(parts) != 3 {
				continue
			}
			dir := strings.Trim(parts[2], "/")
			switch {
			case parts[0] == "0" && parts[1] == "":
				files = append(files, cgroupPath("sys/fs/cgroup", dir, "memory.max"))
			case hasController(parts[1], "memory"):
				files = append(files, cgroupPath("sys/fs/cgroup/memory", dir, "memory.limit_in_bytes"))
			}
		}
	}
	return append(files, "sys/fs/cgroup/memory.max", "sys/fs/cgroup/memory/memory.limit_in_bytes")
}

func cgroupPath(mount, dir, file string) string {
	if dir == "" {
		return mount + "/" + file
	}
	return mount + "/" + dir + "/" + file
}

func hasController(list, name string) bool {
	for _, c := range strings.Split(list, ",") {
		if c == name {
			return true
		}
	}
	return false
}
