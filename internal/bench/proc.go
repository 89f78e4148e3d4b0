package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime and stime in /proc/self/stat. It
// is 100 on every Linux architecture Go supports.
const clockTicks = 100

// cpuSeconds is the user and system CPU time this whole process has used
// (server, worker, API, chains and load generator alike), from /proc/self/stat.
func cpuSeconds() (float64, error) {
	t, err := readStat("self")
	return t.cpu(), err
}

// procStat is what /proc/<pid>/stat says about a process's CPU, in seconds.
type procStat struct {
	ppid                         int
	utime, stime, cutime, cstime float64 // cutime and cstime: its children that exited and were waited for
}

func (t procStat) cpu() float64 { return t.utime + t.stime }

// readStat reads /proc/<pid>/stat.
func readStat(pid string) (procStat, error) {
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return procStat{}, err
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis are fixed: state is field 3, ppid 4, utime 14,
	// stime 15, cutime 16, cstime 17.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("bench: unexpected /proc/%s/stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("bench: unexpected /proc/%s/stat", pid)
	}
	var v [4]float64
	for j := range v {
		if v[j], err = strconv.ParseFloat(f[11+j], 64); err != nil {
			return procStat{}, fmt.Errorf("bench: unexpected /proc/%s/stat", pid)
		}
		v[j] /= clockTicks
	}
	ppid, _ := strconv.Atoi(f[1])
	return procStat{ppid: ppid, utime: v[0], stime: v[1], cutime: v[2], cstime: v[3]}, nil
}

// postgresCPU is the CPU time the PostgreSQL server on this machine has
// used: every postgres process (postmaster, backends, checkpointer, WAL
// writer, autovacuum…) plus, for the backends that have exited, what the
// postmaster reaped (its cutime and cstime). ok is false when no postgres
// process is visible. It is the whole server's: other clients of the same
// server count too.
func postgresCPU() (sec float64, ok bool) {
	stats := map[int]procStat{}
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil {
			continue
		}
		comm, err := os.ReadFile("/proc/" + p.Name() + "/comm")
		if err != nil || strings.TrimSpace(string(comm)) != "postgres" {
			continue
		}
		if t, err := readStat(p.Name()); err == nil {
			stats[pid] = t
		}
	}
	for _, t := range stats {
		sec += t.cpu()
		if _, child := stats[t.ppid]; !child { // the postmaster
			sec += t.cutime + t.cstime
		}
	}
	return sec, len(stats) > 0
}

// memory is the process's resident set now and its peak, in MiB, from
// /proc/self/status.
func memory() (rss, peak float64, err error) {
	m, err := memoryDetail("self")
	return m.rss, m.peak, err
}

// memInfo splits the resident set: anonymous memory (heaps: Go's and
// SQLite's) and file-backed pages (mostly the binary's own code and data,
// paged in as they are used, and given back under memory pressure).
type memInfo struct{ rss, peak, anon, file float64 }

// memoryDetail reads /proc/<pid>/status.
func memoryDetail(pid string) (memInfo, error) {
	var m memInfo
	f, err := os.Open("/proc/" + pid + "/status")
	if err != nil {
		return m, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "VmRSS:"):
			m.rss = kib(line) / 1024
		case strings.HasPrefix(line, "VmHWM:"):
			m.peak = kib(line) / 1024
		case strings.HasPrefix(line, "RssAnon:"):
			m.anon = kib(line) / 1024
		case strings.HasPrefix(line, "RssFile:"):
			m.file = kib(line) / 1024
		}
	}
	return m, sc.Err()
}

func kib(line string) float64 {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0
	}
	v, _ := strconv.ParseFloat(f[1], 64)
	return v
}

// resetPeakRSS starts a new peak-RSS window (VmHWM) of process pid ("self"
// for this one), so each phase reports its own peak. Kernels that refuse
// leave the process-wide peak.
func resetPeakRSS(pid string) {
	_ = os.WriteFile("/proc/"+pid+"/clear_refs", []byte("5"), 0)
}

// loadAverage is the machine's 1-minute load average, from /proc/loadavg:
// other work on the machine skews every number measured beside it.
func loadAverage() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, _ := strconv.ParseFloat(f[0], 64)
	return v
}

// cpuModel names the machine's CPU (for the report).
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
