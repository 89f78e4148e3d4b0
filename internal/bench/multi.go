package bench

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/store"
)

// The multi-process deployment: what a deployment that outgrew one machine
// runs, on one machine. Its Temporal server and keeper's store are on
// PostgreSQL (cfg.Dev.TemporalDB, cfg.StoreURL).
const (
	multiAPIs    = 2
	multiWorkers = 2
)

// startMulti starts `keeper devchains` (when a chain has no RPC URL),
// `keeper devserver`, multiAPIs `keeper api` and multiWorkers `keeper
// worker` processes of bin, each bound to 127.0.0.1 on free ports, logging
// to <name>.log in dir, and returns once every one is ready.
func startMulti(ctx context.Context, bin string, cfg config.Config, dir string, log *slog.Logger) (st *stack, err error) {
	if cfg.HasChain(stub.Name) {
		return nil, fmt.Errorf("bench: the stub chain lives inside one process, so the multi-process deployment cannot use it: pick etherlink and solana (local chains)")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	cfg.DataDir = dir // the local chains write their funded keys here, and the workers read them
	cfg.PprofAddr, cfg.MetricsAddr, cfg.HTTPAddr, cfg.HealthAddr = "", "", "", ""
	st = &stack{local: map[string]bool{}, postgres: localPostgres(cfg.StoreURL) || localPostgres(cfg.Dev.TemporalDB)}
	defer func() {
		if err != nil {
			st.stop()
		}
	}()

	evm := cfg.HasChain("etherlink") && !cfg.EVM.HasEndpoint()
	sol := cfg.HasChain("solana") && !cfg.Solana.HasEndpoint()
	if evm || sol {
		evmPort, solPort := freePort(), freePort()
		c, err := st.spawn(bin, dir, "devchains", false, append(configEnv(cfg),
			"KEEPER_DEV_EVM_PORT="+strconv.Itoa(evmPort), "KEEPER_DEV_SOLANA_PORT="+strconv.Itoa(solPort)))
		if err != nil {
			return st, err
		}
		if err := c.await(ctx, 2*time.Minute, "running its chains", c.logSays("local chains running")); err != nil {
			return st, err
		}
		if evm {
			cfg.EVM.RPCURL, st.local["etherlink"] = fmt.Sprintf("http://127.0.0.1:%d", evmPort), true
		}
		if sol {
			cfg.Solana.RPCURL, st.local["solana"] = fmt.Sprintf("http://127.0.0.1:%d", solPort), true
		}
	}

	tport := freePort()
	temporal := fmt.Sprintf("127.0.0.1:%d", tport)
	srv, err := st.spawn(bin, dir, "devserver", false, append(configEnv(cfg), "KEEPER_DEV_TEMPORAL_PORT="+strconv.Itoa(tport), "KEEPER_DEV_UI_PORT=0"))
	if err != nil {
		return st, err
	}
	if err := srv.await(ctx, 3*time.Minute, "serving", srv.logSays("Temporal server ")); err != nil {
		return st, err
	}

	// The nodes. Each listens on an address of its own, whose /readyz says
	// when it is ready: an API's, a worker's beside its /metrics.
	env := append(configEnv(cfg), "TEMPORAL_ADDRESS="+temporal, "TEMPORAL_NAMESPACE=default")
	kinds := []struct {
		command, addrVar, ready string
		n                       int
	}{
		{"api", "KEEPER_HTTP_ADDR", "/readyz", multiAPIs},
		{"worker", "KEEPER_HEALTH_ADDR", "/readyz", multiWorkers},
	}
	addrs := map[string][]string{}
	var nodes []*child
	for _, k := range kinds {
		for i := 1; i <= k.n; i++ {
			addr := fmt.Sprintf("127.0.0.1:%d", freePort())
			c, err := st.spawn(bin, dir, fmt.Sprintf("%s-%d", k.command, i), true, slices.Concat(env, []string{k.addrVar + "=" + addr}))
			if err != nil {
				return st, err
			}
			nodes = append(nodes, c)
			addrs[k.command] = append(addrs[k.command], addr)
			c.ready = "http://" + addr + k.ready
		}
	}
	for _, c := range nodes {
		if err := c.await(ctx, 2*time.Minute, "ready", answersOK(c.ready)); err != nil {
			return st, err
		}
	}
	st.apis = addrs["api"]

	// The bench's own view: the same store, and a client for the histories.
	recs, err := store.OpenPostgres(ctx, cfg.StoreURL)
	if err != nil {
		return st, err
	}
	st.store = recs
	st.cleanup = append(st.cleanup, func() { recs.Close() })
	if st.client, err = client.Dial(client.Options{HostPort: temporal, Namespace: "default", Logger: sdklog.NewStructuredLogger(log)}); err != nil {
		return st, fmt.Errorf("bench: Temporal client: %w", err)
	}
	st.cleanup = append(st.cleanup, st.client.Close)
	st.heartbeats = func() int64 { return heartbeatsAt(addrs["worker"]) }
	st.cfg = cfg
	return st, nil
}

// child is one keeper process of a multi-process stack.
type child struct {
	name  string
	node  bool   // an API or worker node: stopped first, so it drains against a live server and chains
	ready string // a node's URL that answers 200 once it is ready
	cmd   *exec.Cmd
	log   string        // its stdout and stderr
	done  chan struct{} // closed once it has exited
}

// spawn starts `bin <command>` (the command is name without its number)
// with this process's environment minus keeper's and Temporal's settings,
// plus env; it joins st.procs, which stop ends.
func (st *stack) spawn(bin, dir, name string, node bool, env []string) (*child, error) {
	f, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	command, _, _ := strings.Cut(name, "-")
	cmd := exec.Command(bin, command)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEEPER_") && !strings.HasPrefix(kv, "TEMPORAL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = f, f
	// A process group of its own: a Ctrl-C at the terminal reaches the
	// bench, which stops the children in order. Killed if the bench dies.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("bench: start keeper %s: %w", command, err)
	}
	c := &child{name: name, node: node, cmd: cmd, log: f.Name(), done: make(chan struct{})}
	go func() {
		cmd.Wait()
		f.Close()
		close(c.done)
	}()
	st.procs = append(st.procs, c)
	return c, nil
}

func (c *child) pid() string { return strconv.Itoa(c.cmd.Process.Pid) }

func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// await polls ready until it holds; it fails when the process exits first
// or within passes, quoting the end of its log.
func (c *child) await(ctx context.Context, within time.Duration, what string, ready func() bool) error {
	deadline := time.Now().Add(within)
	for !ready() {
		if c.exited() {
			return fmt.Errorf("bench: keeper %s exited before %s; the end of %s:\n%s", c.name, what, c.log, c.tail())
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: keeper %s not %s after %v; the end of %s:\n%s", c.name, what, within, c.log, c.tail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return nil
}

// logSays reports whether the process's output holds s yet.
func (c *child) logSays(s string) func() bool {
	return func() bool {
		b, _ := os.ReadFile(c.log)
		return strings.Contains(string(b), s)
	}
}

// tail is the last lines of the process's output.
func (c *child) tail() string {
	b, _ := os.ReadFile(c.log)
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-15, 0):], "\n")
}

// stopChildren stops the nodes (SIGTERM, SIGKILL after grace), then the
// server and the chains.
func stopChildren(cs []*child, grace time.Duration) {
	for _, nodes := range []bool{true, false} {
		var group []*child
		for _, c := range cs {
			if c.node == nodes {
				group = append(group, c)
			}
		}
		for _, c := range group {
			c.cmd.Process.Signal(syscall.SIGTERM)
		}
		deadline := time.After(grace)
		for _, c := range group {
			select {
			case <-c.done:
			case <-deadline:
				syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
				<-c.done
			}
		}
	}
}

// exitedChild is the first of the stack's processes that has exited, as an
// error, or nil: a phase whose processes did not all last measured nothing
// worth reporting.
func (st *stack) exitedChild() error {
	for _, c := range st.procs {
		if c.exited() {
			return fmt.Errorf("bench: keeper %s exited during the run; the end of %s:\n%s", c.name, c.log, c.tail())
		}
	}
	return nil
}

// configEnv is cfg as the KEEPER_* environment that gives a child process
// the same configuration.
func configEnv(cfg config.Config) []string {
	fs := pflag.NewFlagSet("bench", pflag.ContinueOnError)
	cfg.Bind(fs, config.Everything)
	var env []string
	for _, k := range cfg.Knobs() {
		env = append(env, k.Env+"="+fs.Lookup(k.Flag).Value.String())
	}
	return env
}

// freePort is a TCP port free on 127.0.0.1 a moment ago.
func freePort() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// answersOK reports whether GET url answers 200.
func answersOK(url string) func() bool {
	return func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}
}

// heartbeatsAt sums the activity heartbeats the workers serving /metrics at
// addrs have sent to the server (their SDK clients' request counter).
func heartbeatsAt(addrs []string) int64 {
	var n float64
	for _, a := range addrs {
		resp, err := http.Get("http://" + a + "/metrics")
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if !strings.HasPrefix(line, "temporal_request_total{") || !strings.Contains(line, `operation="RecordActivityTaskHeartbeat"`) {
				continue
			}
			if v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64); err == nil {
				n += v
			}
		}
		resp.Body.Close()
	}
	return int64(n)
}
