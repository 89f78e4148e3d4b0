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
	b, err := os.ReadFile("/proc/self/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) may hold spaces; the fields after its
	// closing parenthesis are fixed: state is field 3, utime 14, stime 15.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("bench: unexpected /proc/self/stat")
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("bench: unexpected /proc/self/stat")
	}
	utime, err1 := strconv.ParseFloat(f[11], 64)
	stime, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bench: unexpected /proc/self/stat")
	}
	return (utime + stime) / clockTicks, nil
}

// memory is the process's resident set now and its peak, in MiB, from
// /proc/self/status.
func memory() (rss, peak float64, err error) {
	m, err := memoryDetail()
	return m.rss, m.peak, err
}

// memInfo splits the resident set: anonymous memory (heaps: Go's and
// SQLite's) and file-backed pages (mostly the binary's own code and data,
// paged in as they are used, and given back under memory pressure).
type memInfo struct{ rss, peak, anon, file float64 }

func memoryDetail() (memInfo, error) {
	var m memInfo
	f, err := os.Open("/proc/self/status")
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

// resetPeakRSS starts a new peak-RSS window (VmHWM), so each phase reports
// its own peak. Kernels that refuse leave the process-wide peak.
func resetPeakRSS() {
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
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
