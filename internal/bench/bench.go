// Package bench measures keeper on one machine: intake latency under an
// open-loop arrival rate, anchoring throughput batched and per evidence,
// what each evidence costs in Temporal actions, chain transactions, CPU and
// memory, and latency at low load. `keeper bench` runs it on a fresh embedded
// stack; the numbers are reported, never asserted.
package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// The phases a run can hold, in the order they run.
const (
	PhaseLowLoad     = "low-load"     // one evidence every LowLoadEvery for LowLoadFor
	PhaseCadence     = "cadence"      // a steady arrival at each of CadenceRates for CadenceFor
	PhaseIntake      = "intake"       // open-loop POSTs at Rate for Duration
	PhaseBatched     = "batched"      // as much as intake accepts for Duration, default batching
	PhasePerEvidence = "per-evidence" // the same with KEEPER_BATCH_MAX_ITEMS=1, on a second stack
	PhaseBulk        = "bulk"         // as much as POST /v1/evidence/batch accepts for Duration, BulkSize evidence a request
	PhaseTiles       = "tiles"        // TileClients reading the log's tiles from /log/ back to back for TileFor
)

// AllPhases is every phase, in run order.
var AllPhases = []string{PhaseLowLoad, PhaseCadence, PhaseIntake, PhaseBatched, PhaseBulk, PhaseTiles, PhasePerEvidence}

// DefaultPhases are the phases a run without --phases measures: all but
// tiles, which reads the log rather than anchoring evidence and is asked
// for by name.
var DefaultPhases = []string{PhaseLowLoad, PhaseCadence, PhaseIntake, PhaseBatched, PhaseBulk, PhasePerEvidence}

// DeploymentPhases are the phases deployments measured side by side run
// unless told otherwise: intake latency and batched throughput.
var DeploymentPhases = []string{PhaseIntake, PhaseBatched}

// Options configure a run.
type Options struct {
	Config       config.Config // the node's configuration (chains, batching, timeouts)
	Phases       []string      // default DefaultPhases; with Deployments, DeploymentPhases
	Duration     time.Duration // intake, batched and per-evidence phases each; default 60s
	Rate         float64       // intake phase arrival rate, requests/s; default 1000
	Concurrency  int           // clients of the anchoring phases; default 32
	BulkClients  int           // clients of the bulk phase; default 4
	BulkSize     int           // evidence per bulk request; default 1,000
	AnchorRate   float64       // anchoring phases' request cap per second; 0 = as fast as intake answers
	LowLoadEvery time.Duration // default 500ms
	LowLoadFor   time.Duration // default 30s
	CadenceRates []float64     // cadence phase arrival rates, evidence/s; default 1, 10, 100, 1000
	CadenceFor   time.Duration // cadence phase, each rate; default CadenceLeast (60s)
	TileClients  int           // tiles phase: clients reading back to back; default 16
	TileFor      time.Duration // tiles phase: for this long; default 20s
	Drain        time.Duration // longest wait for a phase's evidence to confirm; default 2m
	Dir          string        // where the stacks live; empty = a temporary directory, removed after
	API          string        // host:port of a running keeper API: only the intake phase runs, against it
	// Deployments are measured one after another, each on fresh stacks:
	// DeploySQLite, DeployWitnessed, DeployPostgres, DeployMulti. Empty: one process, its
	// store and Temporal where Config says.
	Deployments []string
	PostgresURL string       // the server DeployPostgres and DeployMulti make fresh databases on; default DefaultPostgresURL
	Binary      string       // the keeper executable DeployMulti runs; default this process's
	Logger      *slog.Logger // the stack's logs; nil = discarded
	Progress    io.Writer    // one line per step; nil = silent
}

// negative refuses a setting given a negative value, which no default
// replaces: 0 asks for the default.
func (o *Options) negative() error {
	return negative(
		setting{"--duration", o.Duration.Seconds()}, setting{"--rate", o.Rate}, setting{"--clients", float64(o.Concurrency)},
		setting{"--bulk-clients", float64(o.BulkClients)}, setting{"--bulk-size", float64(o.BulkSize)},
		setting{"--low-load-every", o.LowLoadEvery.Seconds()}, setting{"--low-load-for", o.LowLoadFor.Seconds()},
		setting{"--cadence-for", o.CadenceFor.Seconds()}, setting{"--tile-clients", float64(o.TileClients)},
		setting{"--tile-for", o.TileFor.Seconds()}, setting{"--drain", o.Drain.Seconds()},
	)
}

// setting is a numeric setting, by its flag's name (or its field's, when it
// has no flag).
type setting struct {
	name  string
	value float64
}

// negative refuses the first setting below zero.
func negative(settings ...setting) error {
	for _, s := range settings {
		if s.value < 0 {
			return fmt.Errorf("bench: %s must not be negative (0 takes the default)", s.name)
		}
	}
	return nil
}

func (o *Options) defaults() {
	if len(o.Phases) == 0 {
		o.Phases = DefaultPhases
		if len(o.Deployments) > 0 {
			o.Phases = DeploymentPhases
		}
	}
	o.Duration = cmp.Or(o.Duration, 60*time.Second)
	o.Rate = cmp.Or(o.Rate, 1000)
	o.BulkClients = cmp.Or(o.BulkClients, 4)
	o.BulkSize = cmp.Or(o.BulkSize, 1000)
	o.Concurrency = cmp.Or(o.Concurrency, 32)
	o.LowLoadEvery = cmp.Or(o.LowLoadEvery, 500*time.Millisecond)
	o.LowLoadFor = cmp.Or(o.LowLoadFor, 30*time.Second)
	if len(o.CadenceRates) == 0 {
		o.CadenceRates = []float64{1, 10, 100, 1000}
	}
	o.CadenceFor = cmp.Or(o.CadenceFor, CadenceLeast)
	o.TileClients = cmp.Or(o.TileClients, 16)
	o.TileFor = cmp.Or(o.TileFor, 20*time.Second)
	o.Drain = cmp.Or(o.Drain, 2*time.Minute)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	o.PostgresURL = cmp.Or(o.PostgresURL, DefaultPostgresURL)
}

func (o *Options) has(phase string) bool { return slices.Contains(o.Phases, phase) }

// Run runs the phases asked for on each deployment and returns their report.
func Run(ctx context.Context, o Options) (*Report, error) {
	if err := o.negative(); err != nil {
		return nil, err
	}
	o.defaults()
	if err := o.check(); err != nil {
		return nil, err
	}
	for _, sp := range o.shortPhases() {
		fmt.Fprintf(o.Progress, "bench: WARNING: %s\n", sp)
	}
	if o.API != "" {
		return runAgainst(ctx, o)
	}
	dir := o.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "keeper-bench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	r := newReport(o)
	mem := startMemorySampler()
	defer func() { r.Memory = mem.stop() }()

	names := o.Deployments
	if len(names) == 0 {
		names = []string{""} // as configured
	}
	for _, name := range names {
		d := newDeployment(o, name)
		r.Deployments = append(r.Deployments, d)
		if err := r.runDeployment(ctx, o, d, name, filepath.Join(dir, d.Name), mem); err != nil {
			return r, err
		}
	}
	r.Machine.LoadEnd = loadAverage()
	r.FinishedAt = time.Now().UTC()
	return r, nil
}

// check refuses options that cannot work together.
func (o *Options) check() error {
	for _, p := range o.Phases {
		if !slices.Contains(AllPhases, p) {
			return fmt.Errorf("bench: unknown phase %q (known: %v)", p, AllPhases)
		}
	}
	if len(o.Deployments) == 0 {
		return nil
	}
	if o.API != "" {
		return fmt.Errorf("bench: --api measures a keeper already running: no deployments to start")
	}
	if o.Config.StoreURL != "" || o.Config.Dev.TemporalDB != "" {
		return fmt.Errorf("bench: each deployment gets fresh databases: leave --store-url and --db (KEEPER_STORE_URL, KEEPER_DEV_TEMPORAL_DB) unset, and give the PostgreSQL server with --postgres-url")
	}
	for _, d := range o.Deployments {
		switch d {
		case DeploySQLite, DeployWitnessed:
		case DeployPostgres, DeployMulti:
			if err := checkPostgresURL(o.PostgresURL); err != nil {
				return err
			}
		default:
			return fmt.Errorf("bench: unknown deployment %q (known: %v)", d, AllDeployments)
		}
	}
	return nil
}

// runDeployment runs the phases on one deployment: a stack for all but
// per-evidence, which gets a second one.
func (r *Report) runDeployment(ctx context.Context, o Options, d *DeploymentReport, name, dir string, mem *memorySampler) error {
	if o.has(PhaseLowLoad) || o.has(PhaseCadence) || o.has(PhaseIntake) || o.has(PhaseBatched) || o.has(PhaseBulk) || o.has(PhaseTiles) {
		if err := r.runStack(ctx, o, d, name, filepath.Join(dir, "batched"), o.Config, []string{PhaseLowLoad, PhaseCadence, PhaseIntake, PhaseBatched, PhaseBulk, PhaseTiles}, mem); err != nil {
			return err
		}
	}
	if o.has(PhasePerEvidence) {
		cfg := o.Config
		cfg.BatchMaxItems = 1
		if err := r.runStack(ctx, o, d, name, filepath.Join(dir, "per-evidence"), cfg, []string{PhasePerEvidence}, mem); err != nil {
			return err
		}
	}
	if d.Batched != nil && d.PerEvidence != nil && d.PerEvidence.ConfirmedPerSec > 0 {
		d.Ratio = round2(d.Batched.ConfirmedPerSec / d.PerEvidence.ConfirmedPerSec)
	}
	return nil
}

// runAgainst measures intake on a running keeper: the anchoring and
// low-load phases need the stack's own store and histories, so they only run
// on a stack the bench starts.
func runAgainst(ctx context.Context, o Options) (*Report, error) {
	if len(o.Phases) != 1 || o.Phases[0] != PhaseIntake {
		return nil, fmt.Errorf("bench: against a running keeper (%s) only the intake phase runs: pass --phases intake", o.API)
	}
	r := newReport(o)
	token, err := o.Config.Token()
	if err != nil {
		return nil, err
	}
	ld := newLoader([]string{o.API}, strconv.FormatInt(time.Now().UnixNano(), 36), token, o.Config.Chains)
	defer ld.close()
	if err := waitReady(ctx, o.API); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Progress, "bench: intake against %s, %.0f requests/s open loop for %v\n", o.API, o.Rate, o.Duration)
	rep := intakeSummary(ld.openLoop(ctx, o.Rate, o.Duration), o.Rate)
	r.Deployments = []*DeploymentReport{{Name: o.API, Processes: "a keeper already running", Intake: &rep}}
	r.Machine.LoadEnd = loadAverage()
	r.FinishedAt = time.Now().UTC()
	return r, nil
}

// runStack starts one stack of the deployment and runs the given phases on
// it, in order.
func (r *Report) runStack(ctx context.Context, o Options, d *DeploymentReport, name, dir string, cfg config.Config, phases []string, mem *memorySampler) error {
	fmt.Fprintf(o.Progress, "bench: %s: starting a fresh stack in %s (batch max items %d)\n", d.Name, dir, cfg.BatchMaxItems)
	st, err := deploy(ctx, o, name, cfg, dir)
	if err != nil {
		return err
	}
	defer st.stop()
	if r.Chains == nil {
		r.Chains = chainInfo(st.cfg, st.local)
	}
	run := strconv.FormatInt(time.Now().UnixNano(), 36)
	token, err := cfg.Token()
	if err != nil {
		return err
	}
	ld := newLoader(st.apis, run, token, cfg.Chains)
	defer ld.close()
	for _, api := range st.apis {
		if err := waitReady(ctx, api); err != nil {
			return err
		}
	}
	for _, p := range phases {
		if !o.has(p) {
			continue
		}
		mem.phase(d.Name, p)
		switch p {
		case PhaseLowLoad:
			fmt.Fprintf(o.Progress, "bench: %s: low load, one evidence every %v for %v\n", d.Name, o.LowLoadEvery, o.LowLoadFor)
			rep, err := lowLoad(ctx, o, st, ld)
			if err != nil {
				return err
			}
			d.LowLoad = rep
		case PhaseCadence:
			rep, err := cadence(ctx, o, st, ld)
			if err != nil {
				return err
			}
			d.Cadence = rep
		case PhaseIntake:
			fmt.Fprintf(o.Progress, "bench: %s: intake, %.0f requests/s open loop for %v\n", d.Name, o.Rate, o.Duration)
			rep, err := intake(ctx, o, st, ld)
			if err != nil {
				return err
			}
			d.Intake = rep
		case PhaseTiles:
			fmt.Fprintf(o.Progress, "bench: %s: tiles, %d clients reading for %v\n", d.Name, o.TileClients, o.TileFor)
			bulk := newBulkLoader(st.apis, run, token, cfg.Chains, o.BulkSize)
			rep, err := tiles(ctx, o, st, bulk)
			bulk.close()
			if err != nil {
				return err
			}
			d.Tiles = rep
		case PhaseBatched, PhasePerEvidence, PhaseBulk:
			l, clients := ld, o.Concurrency
			if p == PhaseBulk {
				l, clients = newBulkLoader(st.apis, run, token, cfg.Chains, o.BulkSize), o.BulkClients
				defer l.close()
			}
			fmt.Fprintf(o.Progress, "bench: %s: anchoring %s, %d clients for %v\n", d.Name, p, clients, o.Duration)
			rep, err := anchoring(ctx, o, p, st, l, func() { mem.phase(d.Name, "") })
			if err != nil {
				return err
			}
			switch p {
			case PhaseBatched:
				d.Batched = rep
			case PhaseBulk:
				d.Bulk = rep
			default:
				d.PerEvidence = rep
			}
		}
		if err := st.exitedChild(); err != nil {
			return err
		}
	}
	mem.phase(d.Name, "")
	return nil
}

// waitReady waits until the node answers /readyz (chains and Temporal up).
func waitReady(ctx context.Context, apiAddr string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := http.Get("http://" + apiAddr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: keeper at %s not ready after a minute", apiAddr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// window is the evidence one phase took in: seqs (after, upto].
type window struct{ after, upto int64 }

// drain waits until every evidence of w has settled (confirmed or dead
// letter) or limit passes; it returns whether all did.
func drain(ctx context.Context, st records, w window, limit time.Duration) (bool, error) {
	deadline := time.Now().Add(limit)
	for {
		// An existence check, not a count: counting a flooded phase's
		// evidence every 250 ms took a sixth of the machine.
		unsettled, err := st.Unsettled(ctx, w.after, w.upto)
		if err != nil {
			return false, err
		}
		if !unsettled {
			return true, nil
		}
		if time.Now().After(deadline) {
			return false, nil
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// IntakeReport is the open-loop intake phase.
type IntakeReport struct {
	TargetRate   float64        `json:"target_rate"`
	AchievedRate float64        `json:"achieved_rate"`
	DurationS    float64        `json:"duration_s"`
	Requests     int            `json:"requests"`
	Accepted     int            `json:"accepted"`
	Errors       int            `json:"errors"`
	ErrorsBy     map[string]int `json:"errors_by_status,omitempty"`
	Latency      Latency        `json:"latency"`
	// Steps is where the time went, on average over every accepted request
	// (All) and over the slowest 1 % (Slowest: those at or above the p99).
	Steps struct {
		All     *StepsReport `json:"all,omitempty"`
		Slowest *StepsReport `json:"slowest_1pct,omitempty"`
	} `json:"steps"`
	Load1 float64    `json:"load_average_1m"`
	Log   *LogReport `json:"log,omitempty"` // the intake phase's evidence in the log (not set inside an anchoring phase's report)
}

func intakeSummary(l load, target float64) IntakeReport {
	rep := IntakeReport{TargetRate: target, Requests: len(l.reqs), ErrorsBy: map[string]int{}}
	ds := make([]time.Duration, 0, len(l.reqs))
	for _, q := range l.reqs {
		ds = append(ds, q.latency)
		if q.status == http.StatusAccepted {
			rep.Accepted++
			continue
		}
		rep.Errors++
		key := strconv.Itoa(int(q.status))
		if q.status == 0 {
			key = "transport"
		}
		rep.ErrorsBy[key]++
	}
	rep.Latency = summarize(ds)
	if len(ds) > 0 {
		rep.Steps.All, rep.Steps.Slowest = stepsOf(l.reqs, 0), stepsOf(l.reqs, rank(ds, 0.99))
	}
	if d := l.end.Sub(l.start).Seconds(); d > 0 {
		rep.DurationS = round2(d)
		rep.AchievedRate = round2(float64(rep.Accepted) / d)
	}
	rep.Load1 = loadAverage()
	return rep
}

func intake(ctx context.Context, o Options, st *stack, ld *loader) (*IntakeReport, error) {
	before, err := st.store.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	lp, err := startLogPhase(ctx, st)
	if err != nil {
		return nil, err
	}
	l := ld.openLoop(ctx, o.Rate, o.Duration)
	rep := intakeSummary(l, o.Rate)
	after, err := st.store.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	// Let anchoring catch up before the next phase measures its own.
	if _, err := drain(ctx, st.store, window{before, after}, o.Drain); err != nil {
		return nil, err
	}
	if rep.Log, err = lp.finish(ctx, window{before, after}); err != nil {
		return nil, err
	}
	return &rep, nil
}

// memorySampler records the process's RSS every second. With a
// multi-process deployment the process is the bench alone: the load
// generator.
type memorySampler struct {
	start time.Time
	mu    sync.Mutex
	dep   string
	cur   string
	out   []MemorySample
	done  chan struct{}
	wg    sync.WaitGroup
}

// MemorySample is the process's resident set at one moment of the run.
type MemorySample struct {
	T          float64 `json:"t_s"`
	Deployment string  `json:"deployment,omitempty"`
	Phase      string  `json:"phase,omitempty"` // empty between phases and while a phase is being analysed
	RSSMiB     float64 `json:"rss_mib"`
	AnonMiB    float64 `json:"anon_mib"`         // anonymous: Go's heap and stacks, SQLite's memory
	FileMiB    float64 `json:"file_mib"`         // file-backed: mostly the binary's pages
	HeapMiB    float64 `json:"go_heap_mib"`      // in use, garbage not yet collected included
	LiveMiB    float64 `json:"go_live_heap_mib"` // reachable at the last GC: what a leak would grow
}

// MemoryReport is the process's memory over the whole run.
type MemoryReport struct {
	PeakRSSMiB float64        `json:"peak_rss_mib"`
	Samples    []MemorySample `json:"samples"`
}

func startMemorySampler() *memorySampler {
	m := &memorySampler{start: time.Now(), done: make(chan struct{})}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			m.sample()
			select {
			case <-m.done:
				return
			case <-t.C:
			}
		}
	}()
	return m
}

func (m *memorySampler) sample() {
	mi, err := memoryDetail("self")
	if err != nil {
		return
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	m.mu.Lock()
	m.out = append(m.out, MemorySample{
		T: round2(time.Since(m.start).Seconds()), Deployment: m.dep, Phase: m.cur, RSSMiB: round2(mi.rss),
		AnonMiB: round2(mi.anon), FileMiB: round2(mi.file), HeapMiB: round2(float64(ms.HeapInuse) / (1 << 20)),
		LiveMiB: round2(float64(live[0].Value.Uint64()) / (1 << 20)),
	})
	m.mu.Unlock()
}

// phase labels the samples from now on: which deployment, which phase.
func (m *memorySampler) phase(deployment, p string) {
	m.mu.Lock()
	m.dep, m.cur = deployment, p
	m.mu.Unlock()
}

func (m *memorySampler) stop() *MemoryReport {
	close(m.done)
	m.wg.Wait()
	_, peak, _ := memory()
	m.mu.Lock()
	defer m.mu.Unlock()
	return &MemoryReport{PeakRSSMiB: round2(peak), Samples: m.out}
}

// workflowIDs are the AnchorBatch workflows of the settled batches.
func workflowIDs(bs []store.BatchTiming) []string {
	var out []string
	for _, b := range bs {
		if b.State == store.BatchConfirmed || b.State == store.BatchDeadLetter {
			out = append(out, workflows.WorkflowID(b.Chain, b.ID))
		}
	}
	return out
}

func round2(v float64) float64 {
	if v < 0 {
		return -round2(-v)
	}
	return float64(int64(v*100+0.5)) / 100
}

// machine describes where the run happened.
func machine() Machine {
	host, _ := os.Hostname()
	return Machine{CPUs: runtime.NumCPU(), CPU: cpuModel(), GoVersion: runtime.Version(), OS: runtime.GOOS + "/" + runtime.GOARCH, Host: host, LoadStart: loadAverage()}
}
