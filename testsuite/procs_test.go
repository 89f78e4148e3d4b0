package testsuite

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// binDir holds the keeper binary built for this test run; TestMain removes it.
var binDir string

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		_ = os.RemoveAll(binDir)
	}
	os.Exit(code)
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// keeperBinary builds cmd/keeper once per test run and returns its path,
// for tests that run keeper as separate OS processes.
func keeperBinary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "keeper-testsuite-")
		if buildErr != nil {
			return
		}
		builtBin = filepath.Join(binDir, "keeper")
		build := exec.Command("go", "build", "-o", builtBin, "../cmd/keeper")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		buildErr = build.Run()
	})
	require.NoError(t, buildErr, "building keeper")
	return builtBin
}

// proc is one keeper OS process a test starts, kills and restarts.
type proc struct {
	name string
	args []string
	env  []string
	log  *os.File
	cmd  *exec.Cmd
}

// start runs the process with the test's environment plus p.env. Inherited
// TEMPORAL_* variables are dropped: each test says how to reach Temporal.
func (p *proc) start(t *testing.T, bin string) {
	t.Helper()
	p.cmd = exec.Command(bin, p.args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TEMPORAL_") {
			p.cmd.Env = append(p.cmd.Env, kv)
		}
	}
	p.cmd.Env = append(p.cmd.Env, p.env...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, p.cmd.Start(), p.name)
}

func (p *proc) kill() {
	if p.cmd != nil && p.cmd.Process != nil {
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		_ = p.cmd.Wait()
	}
}

// procLog creates the log file of process name in dir.
func procLog(t *testing.T, dir, name string) *os.File {
	t.Helper()
	f, err := os.Create(filepath.Join(dir, name+".log"))
	require.NoError(t, err)
	t.Cleanup(func() { f.Close() })
	return f
}

// killAtCleanup kills every process when the test ends and, if it failed,
// logs the tail of each one's log.
func killAtCleanup(t *testing.T, procs ...*proc) {
	t.Cleanup(func() {
		for _, p := range procs {
			p.kill()
		}
		if !t.Failed() {
			return
		}
		for _, p := range procs {
			b, _ := os.ReadFile(p.log.Name())
			if len(b) > 4000 {
				b = b[len(b)-4000:]
			}
			t.Logf("--- %s log (tail) ---\n%s", p.name, b)
		}
	})
}

func waitPort(t *testing.T, port int, within time.Duration) {
	t.Helper()
	require.Eventually(t, func() bool {
		c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), 200*time.Millisecond)
		if err == nil {
			c.Close()
		}
		return err == nil
	}, within, 50*time.Millisecond, "port %d", port)
}
