package bench

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/workflows"
)

// EpochOptions shape `keeper bench epoch`.
type EpochOptions struct {
	Config    config.Config
	Accounts  int           // default 1,000,000
	Pool      string        // default 2^127, the largest pool
	Limit     time.Duration // longest wait for the epoch; default 10m
	Dir       string        // where the stack lives; empty = a temporary directory, removed after
	Logger    *slog.Logger
	Progress  func(format string, args ...any)
	PollEvery time.Duration // default 100ms
}

// EpochMeasured is one epoch computed end to end.
type EpochMeasured struct {
	ID            string             `json:"id"`
	Status        string             `json:"status"`
	Accounts      int                `json:"accounts"`
	Pool          string             `json:"pool"`
	TotalPaid     string             `json:"total_paid"`
	SourceMiB     float64            `json:"source_mib"`
	Stages        map[string]float64 `json:"stages_s"`   // start, seal, compute, artifacts, intents, anchor
	ComputedS     float64            `json:"computed_s"` // request → artifacts written
	CompletedS    float64            `json:"completed_s"`
	Intents       int                `json:"intents"`
	IntentsPerSec float64            `json:"intents_per_s"`
}

// RunEpoch serves the usage of Accounts accounts from a local accounting
// source, asks the API to compute an epoch from it, and follows the epoch
// until it completed: sealed, split, written, intents acknowledged by the
// built-in ledger and the commitment anchored.
func RunEpoch(ctx context.Context, o EpochOptions) (*WorkloadReport, error) {
	if err := negative(setting{"--accounts", float64(o.Accounts)}, setting{"--limit", o.Limit.Seconds()}, setting{"PollEvery", o.PollEvery.Seconds()}); err != nil {
		return nil, err
	}
	o.Accounts = cmp.Or(o.Accounts, 1_000_000)
	o.Pool = cmp.Or(o.Pool, "170141183460469231731687303715884105728")
	o.Limit = cmp.Or(o.Limit, 10*time.Minute)
	o.PollEvery = cmp.Or(o.PollEvery, 100*time.Millisecond)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = func(string, ...any) {}
	}
	dir, cleanup, err := workDir(o.Dir, "epoch")
	if err != nil {
		return nil, err
	}
	defer cleanup()
	r := newWorkloadReport("epoch", map[string]any{"accounts": o.Accounts, "pool": o.Pool, "chains": o.Config.Chains})

	body := usageList(o.Accounts)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	src := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}), ReadHeaderTimeout: 5 * time.Second}
	go src.Serve(ln)
	defer src.Close()

	o.Progress("starting a fresh stack in %s", dir)
	s, err := startStack(ctx, o.Config, dir, o.Logger)
	if err != nil {
		return nil, err
	}
	defer s.stop()
	cpu0, _ := cpuSeconds()
	id := "bench-" + strconv.FormatInt(time.Now().Unix(), 10)
	e := &EpochMeasured{ID: id, Accounts: o.Accounts, Pool: o.Pool, SourceMiB: round2(float64(len(body)) / (1 << 20)), Stages: map[string]float64{}}
	r.Epoch = e
	api := "http://" + s.node.APIAddr() + "/rewarder/epochs/" + id
	req := fmt.Sprintf(`{"pool":%q,"source":"http://%s/usage.json"}`, o.Pool, ln.Addr())
	o.Progress("computing epoch %s: %d accounts from %s", id, o.Accounts, ln.Addr())
	var m epochView
	start := time.Now()
	if _, err := apiJSON(ctx, "POST", api+"/compute", []byte(req), &m); err != nil {
		return r, err
	}
	err = poll(ctx, o.PollEvery, o.Limit, "epoch "+id, func() (bool, error) {
		if _, err := apiJSON(ctx, "GET", api, nil, &m); err != nil {
			return false, err
		}
		if e.ComputedS == 0 && m.Timings["written_at"] != "" {
			e.ComputedS = round2(time.Since(start).Seconds())
		}
		switch m.Status {
		case "completed":
			return true, nil
		case "failed", "quarantined":
			return false, fmt.Errorf("bench epoch: epoch %s %s: %s", id, m.Status, m.Reason)
		}
		return false, nil
	})
	if err != nil {
		return r, err
	}
	e.CompletedS = round2(time.Since(start).Seconds())
	e.Status, e.TotalPaid, e.Intents = m.Status, m.TotalPaid, m.Intents.Acknowledged
	stage := func(name, from, to string) {
		a, err1 := time.Parse(time.RFC3339Nano, m.Timings[from])
		b, err2 := time.Parse(time.RFC3339Nano, m.Timings[to])
		if err1 == nil && err2 == nil {
			e.Stages[name] = round2(b.Sub(a).Seconds())
		}
	}
	stage("start", "queued_at", "started_at")
	stage("seal", "started_at", "sealed_at")
	stage("compute", "sealed_at", "computed_at")
	stage("artifacts", "computed_at", "written_at")
	stage("intents", "written_at", "intents_at")
	stage("anchor", "intents_at", "anchored_at")
	if d := e.Stages["intents"]; d > 0 {
		e.IntentsPerSec = round2(float64(e.Intents) / d)
	}
	r.finish(cpu0)
	if r.Actions, err = countActions(ctx, s.node.Client, []string{workflows.EpochWorkflowID(id)}); err != nil {
		return r, err
	}
	r.Actions.Heartbeats = s.rpcs.get("RecordActivityTaskHeartbeat")
	r.Actions.total()
	return r, nil
}

// epochView is the part of GET /rewarder/epochs/{id} the bench reads.
type epochView struct {
	Status    string            `json:"status"`
	Reason    string            `json:"reason"`
	TotalPaid string            `json:"total_paid"`
	Timings   map[string]string `json:"timings"`
	Intents   struct {
		Acknowledged int `json:"acknowledged"`
	} `json:"intents"`
}

// usageList is an accounting source's answer for n accounts with varied
// units.
func usageList(n int) []byte {
	var b bytes.Buffer
	b.Grow(n * 40)
	b.WriteByte('[')
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"account":"acct-%07d","units":"%d"}`, i, i%9973+1)
	}
	b.WriteByte(']')
	return b.Bytes()
}
