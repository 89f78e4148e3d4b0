package cli

import (
	"math"
	"os"
	"runtime/debug"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
)

func TestKeeperCollectsGarbageAtItsOwnTargetUnlessGOGCIsSet(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	t.Setenv("GOGC", "")
	os.Unsetenv("GOGC")
	TuneGC()
	assert.Equal(t, GCPercent, debug.SetGCPercent(100), "GOGC unset: keeper's target")

	t.Setenv("GOGC", "100")
	TuneGC()
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC set: the runtime's, as GOGC says")
}

func TestKeeperSetsASoftMemoryLimitUnlessGOMEMLIMITIsSet(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOMEMLIMIT")
	l := TuneGC()
	assert.Equal(t, l.Bytes, debug.SetMemoryLimit(-1), "keeper's limit is the runtime's")
	assert.Equal(t, memoryLimit(os.DirFS("/")), l, "the cgroup's or the default")
	assert.Greater(t, l.Bytes, int64(0))

	debug.SetMemoryLimit(123 << 20)
	t.Setenv("GOMEMLIMIT", "123MiB")
	l = TuneGC()
	assert.Equal(t, MemoryLimit{Bytes: 123 << 20, Source: "GOMEMLIMIT"}, l, "GOMEMLIMIT set: left as it is")
}

func TestTheSoftMemoryLimitIsNinetyPercentOfTheContainersCgroupLimit(t *testing.T) {
	gib := "1073741824\n"
	for name, c := range map[string]struct {
		fs   fstest.MapFS
		want MemoryLimit
	}{
		"cgroup v2, the process's own cgroup": {fstest.MapFS{
			"proc/self/cgroup":                          {Data: []byte("0::/kubepods/pod1/c1\n")},
			"sys/fs/cgroup/kubepods/pod1/c1/memory.max": {Data: []byte(gib)},
		}, MemoryLimit{Bytes: 966367641, Source: "cgroup /sys/fs/cgroup/kubepods/pod1/c1/memory.max"}},
		"cgroup v2 inside its namespace": {fstest.MapFS{
			"proc/self/cgroup":         {Data: []byte("0::/\n")},
			"sys/fs/cgroup/memory.max": {Data: []byte(gib)},
		}, MemoryLimit{Bytes: 966367641, Source: "cgroup /sys/fs/cgroup/memory.max"}},
		"cgroup v1's memory controller": {fstest.MapFS{
			"proc/self/cgroup": {Data: []byte("5:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n")},
			"sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes": {Data: []byte("2147483648\n")},
			"sys/fs/cgroup/memory/memory.limit_in_bytes":            {Data: []byte("9223372036854771712\n")},
		}, MemoryLimit{Bytes: 1932735283, Source: "cgroup /sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes"}},
		"v2 with no limit: the default": {fstest.MapFS{
			"proc/self/cgroup":         {Data: []byte("0::/\n")},
			"sys/fs/cgroup/memory.max": {Data: []byte("max\n")},
		}, MemoryLimit{Bytes: DefaultMemoryLimit, Source: "default"}},
		"v1 unlimited (a page-rounded MaxInt64): the default": {fstest.MapFS{
			"proc/self/cgroup": {Data: []byte("4:memory:/process_api/x\n")},
			"sys/fs/cgroup/memory/process_api/x/memory.limit_in_bytes": {Data: []byte("9223372036854771712\n")},
		}, MemoryLimit{Bytes: DefaultMemoryLimit, Source: "default"}},
		"no cgroup files at all: the default": {fstest.MapFS{}, MemoryLimit{Bytes: DefaultMemoryLimit, Source: "default"}},
	} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, c.want, memoryLimit(c.fs))
		})
	}
}
