package bench

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keeperhq/keeper/internal/redact"
)

// Report is everything one run measured. It is written as JSON as is.
type Report struct {
	Version     int                 `json:"version"` // 2: the phases' results are per deployment
	StartedAt   time.Time           `json:"started_at"`
	FinishedAt  time.Time           `json:"finished_at"`
	Machine     Machine             `json:"machine"`
	Settings    Settings            `json:"settings"`
	Chains      []ChainInfo         `json:"chains"`
	Deployments []*DeploymentReport `json:"deployments"`      // in the order they ran
	Memory      *MemoryReport       `json:"memory,omitempty"` // this process's: the whole stack of a single-process deployment
	Targets     []Target            `json:"targets"`
	// ShortPhases are the phases asked to run for less than their steady
	// window needs: their figures are not steady state.
	ShortPhases []ShortPhase `json:"short_phases,omitempty"`
}

// Machine is where the run happened. Other work on the machine shows in the
// load averages.
type Machine struct {
	CPUs      int     `json:"cpus"`
	CPU       string  `json:"cpu"`
	OS        string  `json:"os"`
	GoVersion string  `json:"go"`
	Host      string  `json:"host"`
	LoadStart float64 `json:"load_average_1m_start"`
	LoadEnd   float64 `json:"load_average_1m_end"`
}

// Settings are the run's knobs.
type Settings struct {
	Phases         []string `json:"phases"`
	DurationS      float64  `json:"duration_s"`
	Rate           float64  `json:"intake_rate"`
	Clients        int      `json:"anchoring_clients"`
	AnchorRate     float64  `json:"anchoring_rate,omitempty"`
	Chains         []string `json:"chains"`
	BatchMaxItems  int      `json:"batch_max_items"`
	BatchMaxWaitMS float64  `json:"batch_max_wait_ms"`
	ConfirmPollMS  float64  `json:"confirm_poll_ms"`
	Deployments    []string `json:"deployments,omitempty"`
	PostgresURL    string   `json:"postgres_url,omitempty"` // where the PostgreSQL deployments' databases were, password removed
}

// Target is one of the targets with the value this run measured.
// A benchmark reports; it never fails a build on speed.
type Target struct {
	Deployment string  `json:"deployment"`
	Name       string  `json:"name"`
	Goal       string  `json:"goal"`
	Measured   string  `json:"measured"`
	Value      float64 `json:"value"`
	Met        bool    `json:"met"`
	// Verdict is VerdictMet or VerdictMissed, or VerdictNotSteady when the
	// phase was too short for its steady window (never met then), or
	// VerdictStated for a figure the issues ask to see without a goal.
	Verdict string `json:"verdict"`
}

// A Target's verdicts.
const (
	VerdictMet       = "met"
	VerdictMissed    = "missed"
	VerdictNotSteady = "not steady"
	VerdictStated    = "stated"
)

// targets collects one deployment's targets.
type targets struct {
	deployment string
	list       []Target
}

// add adds a target with a goal.
func (ts *targets) add(name, goal, measured string, v float64, met bool) {
	verdict := VerdictMissed
	if met {
		verdict = VerdictMet
	}
	ts.list = append(ts.list, Target{Deployment: ts.deployment, Name: name, Goal: goal, Measured: measured, Value: v, Met: met, Verdict: verdict})
}

// steady adds a target measured over a steady window: not steady (and not
// met) when the phase was too short for one.
func (ts *targets) steady(steady bool, name, goal, measured string, v float64, met bool) {
	if steady {
		ts.add(name, goal, measured, v, met)
		return
	}
	ts.list = append(ts.list, Target{Deployment: ts.deployment, Name: name, Goal: goal, Measured: measured + " (phase too short for a steady window)",
		Value: v, Verdict: VerdictNotSteady})
}

// stated adds a figure without a goal.
func (ts *targets) stated(name, measured string, v float64) {
	ts.list = append(ts.list, Target{Deployment: ts.deployment, Name: name, Goal: "stated", Measured: measured, Value: v, Verdict: VerdictStated})
}

func newReport(o Options) *Report {
	r := &Report{
		Version: 2, StartedAt: time.Now().UTC(), Machine: machine(),
		Settings: Settings{
			Phases: o.Phases, DurationS: o.Duration.Seconds(), Rate: o.Rate, Clients: o.Concurrency, AnchorRate: o.AnchorRate,
			Chains: o.Config.Chains, BatchMaxItems: o.Config.BatchMaxItems, BatchMaxWaitMS: msOf(o.Config.BatchMaxWait),
			ConfirmPollMS: msOf(o.Config.ConfirmPoll), Deployments: o.Deployments,
		},
	}
	r.ShortPhases = o.shortPhases()
	if slices.ContainsFunc(o.Deployments, func(d string) bool { return d == DeployPostgres || d == DeployMulti }) {
		r.Settings.PostgresURL = redact.URL(o.PostgresURL)
	}
	return r
}

// Evaluate fills Targets from the measurements present, deployment by
// deployment.
func (r *Report) Evaluate() {
	r.Targets = nil
	for _, d := range r.Deployments {
		r.evaluate(d)
	}
}

func (r *Report) evaluate(d *DeploymentReport) {
	ts := &targets{deployment: d.Name}
	add := ts.add
	g := goalsFor(d.Name)
	if in := d.Intake; in != nil {
		// p95 < 100 ms is intake's latency target (docs/anchoring.md, "Intake
		// and the queue").
		add("intake p99", fmt.Sprintf("≤ %.0f ms at %.0f req/s, no errors", g.intakeP99, in.TargetRate),
			fmt.Sprintf("%.2f ms at %.0f req/s, %d errors", in.Latency.P99, in.AchievedRate, in.Errors), in.Latency.P99,
			in.Latency.P99 <= g.intakeP99 && in.Errors == 0 && in.AchievedRate >= 0.98*in.TargetRate)
		add("intake p95", "< 100 ms", fmt.Sprintf("%.2f ms", in.Latency.P95), in.Latency.P95, in.Latency.P95 < 100)
		checkpointTarget(ts, fmt.Sprintf("intake at %.0f/s", in.TargetRate), in.TargetRate, in.Log)
		quorumTarget(ts, fmt.Sprintf("intake at %.0f/s", in.TargetRate), in.Log)
		logBytesTarget(ts, "intake", in.Log)
	}
	if b := d.Bulk; b != nil && r.Settings.AnchorRate == 0 {
		ts.steady(b.Steady, "bulk confirmed/s", fmt.Sprintf("≥ %s/s sustained", thousands(g.bulk)), fmt.Sprintf("%.0f/s", b.ConfirmedPerSec), b.ConfirmedPerSec, b.ConfirmedPerSec >= g.bulk && b.Drained)
	}
	if b := d.Bulk; b != nil {
		storeTargets(ts, PhaseBulk, b)
	}
	if b := d.Batched; b != nil && r.Settings.AnchorRate == 0 { // the saturation targets need an uncapped run
		ts.steady(b.Steady, "batched confirmed/s", fmt.Sprintf("≥ %s/s sustained", thousands(g.batched)), fmt.Sprintf("%.0f/s", b.ConfirmedPerSec), b.ConfirmedPerSec, b.ConfirmedPerSec >= g.batched && b.Drained)
		cpu, who := b.CPUPer1000, "keeper's processes"
		if b.Postgres != nil {
			cpu, who = round2(cpu+b.Postgres.CPUPer1000), "keeper + PostgreSQL"
		}
		ts.steady(b.Steady, "CPU per 1,000 evidence", fmt.Sprintf("≤ %.2f s (%s)", g.cpuPer1000, who), fmt.Sprintf("%.2f s", cpu), cpu, cpu <= g.cpuPer1000)
		add("Temporal actions per evidence", "≤ 0.05 at saturation", fmt.Sprintf("%.4f", b.ActionsPerEv), b.ActionsPerEv, b.ActionsPerEv <= 0.05 && b.SettledEvidence > 0)
		add("chain transactions per evidence", "≤ 0.01 at saturation", fmt.Sprintf("%.4f", b.ChainTxsPerEv), b.ChainTxsPerEv, b.ChainTxsPerEv <= 0.01 && b.SettledEvidence > 0)
		r.addUpTarget(ts, d, b)
	}
	if b := d.Batched; b != nil {
		storeTargets(ts, PhaseBatched, b)
	}
	if tl := d.Tiles; tl != nil {
		add("tile reads/s", "≥ 5,000/s served over HTTP", fmt.Sprintf("%.0f/s, %d errors", tl.ReadsPerSec, tl.Errors), tl.ReadsPerSec,
			tl.ReadsPerSec >= 5000 && tl.Errors == 0)
	}
	if d.Batched != nil && d.PerEvidence != nil {
		ts.steady(d.Batched.Steady && d.PerEvidence.Steady, "batched / per-evidence", "≥ 25×",
			fmt.Sprintf("%.1f× (%.0f/s vs %.1f/s)", d.Ratio, d.Batched.ConfirmedPerSec, d.PerEvidence.ConfirmedPerSec), d.Ratio, d.Ratio >= 25)
	}
	if l := d.LowLoad; l != nil {
		add("low load intake → submitted p50", "≤ 300 ms", fmt.Sprintf("%.0f ms", l.IntakeToSubmitted.P50), l.IntakeToSubmitted.P50,
			l.IntakeToSubmitted.N > 0 && l.IntakeToSubmitted.P50 <= 300)
		add("low load intake → confirmed", fmt.Sprintf("≤ finality + 1 s = %.1f s", (l.FinalityMS+1000)/1000),
			fmt.Sprintf("p50 %.2f s, p99 %.2f s", l.IntakeToConfirmed.P50/1000, l.IntakeToConfirmed.P99/1000), l.IntakeToConfirmed.P99,
			l.IntakeToConfirmed.N > 0 && l.IntakeToConfirmed.P99 <= l.FinalityMS+1000)
	}
	if c := d.Cadence; c != nil {
		for i := range c.Rows {
			cadenceTargets(ts, &c.Rows[i])
		}
	}
	if g, ok := r.growth(d.Name, rssOf); ok && d.singleProcess() {
		add("memory flat", "≤ 10 % growth after warm-up", fmt.Sprintf("%+.1f %%", g), g, g <= 10)
	}
	r.Targets = append(r.Targets, ts.list...)
}

// cadenceTargets adds one cadence rate's targets: its batches within the
// cadence (docs/anchoring.md: per chain one batch per interval, plus each
// full batch), its log, and its confirmation latency.
func cadenceTargets(ts *targets, row *CadenceRow) {
	if len(row.BatchCeiling) > 0 {
		worst, within := row.overCeiling()
		var per []string
		for _, ch := range slices.Sorted(maps.Keys(row.BatchCeiling)) {
			per = append(per, fmt.Sprintf("%s %d (%d full) of %d", ch, row.Batches[ch], row.FullBatches[ch], row.BatchCeiling[ch]))
		}
		ts.add(fmt.Sprintf("cadence at %g/s: batches per chain", row.Rate), "≤ ⌈arrival ÷ interval⌉ + 1, plus one per full batch",
			strings.Join(per, ", "), worst, within && row.Confirmed > 0)
	}
	checkpointTarget(ts, fmt.Sprintf("cadence at %g/s", row.Rate), row.Rate, row.Log)
	quorumTarget(ts, fmt.Sprintf("cadence at %g/s", row.Rate), row.Log)
	ts.add(fmt.Sprintf("cadence at %g/s: intake → confirmed p99", row.Rate), fmt.Sprintf("≤ finality + interval + 1 s = %.1f s", row.ConfirmedP99Target/1000),
		fmt.Sprintf("%.2f s", row.IntakeToConfirmed.P99/1000), row.IntakeToConfirmed.P99,
		row.IntakeToConfirmed.N > 0 && row.IntakeToConfirmed.P99 <= row.ConfirmedP99Target)
	if row.Path != nil {
		f := row.FinalToConfirmed
		ts.add(fmt.Sprintf("cadence at %g/s: finalizing block → confirmed p99", row.Rate), fmt.Sprintf("≤ %s after the block that makes the anchor final", secs(finalToConfirmedGoalMS)),
			fmt.Sprintf("p50 %s, p99 %s (%d of %d confirmed)", secs(f.P50), secs(f.P99), f.N, row.Confirmed), f.P99, f.N > 0 && f.P99 <= finalToConfirmedGoalMS)
	}
}

// finalToConfirmedGoalMS is how soon after the block (slot) that makes the
// last of its anchors final an evidence must be confirmed (docs/anchoring.md,
// "Waiting for finality").
const finalToConfirmedGoalMS = 1000

// storeTargets adds an anchoring phase's storage (docs/benchmarks.md,
// Targets, final): keeper's store per evidence and chain, the log included
// (the store's growth holds the log's tables: they live in it), and the
// log's own bytes per evidence.
func storeTargets(ts *targets, phase string, a *AnchorReport) {
	if a.BytesPerEvidenceChain > 0 {
		measured := fmt.Sprintf("%.0f", a.BytesPerEvidenceChain)
		if a.Log != nil {
			measured += fmt.Sprintf(", of which the log %.0f", a.LogBytesPerEvidenceChain)
		}
		ts.add(phase+": store bytes per evidence and chain, the log included", "≤ 200", measured, a.BytesPerEvidenceChain, a.BytesPerEvidenceChain <= 200)
	}
	logBytesTarget(ts, phase, a.Log)
	memoryTarget(ts, phase, a)
}

// peakRSSGoalMiB is the memory a keeper process may reach in any phase,
// with no operator setting (docs/benchmarks.md).
const peakRSSGoalMiB = 1024

// memoryTarget holds the phase's largest keeper process to peakRSSGoalMiB:
// the one process of a single-process deployment (its embedded Temporal
// server, chains and the bench's load generator with it), or the largest
// of a multi-process one's (the bench's own left out).
func memoryTarget(ts *targets, phase string, a *AnchorReport) {
	peak, who := a.PeakRSSMiB, "the one process"
	if len(a.Processes) > 0 {
		peak, who = 0, ""
		for _, p := range a.Processes {
			if p.Name != "bench" && p.PeakRSSMiB > peak {
				peak, who = p.PeakRSSMiB, p.Name
			}
		}
	}
	if peak <= 0 {
		return
	}
	ts.add(phase+": peak RSS", fmt.Sprintf("≤ %d MiB, no setting", peakRSSGoalMiB), fmt.Sprintf("%.0f MiB (%s)", peak, who), peak, peak <= peakRSSGoalMiB)
}

// logBytesTarget states the log's own bytes per evidence, which has no goal
// of its own: it counts within the store's.
func logBytesTarget(ts *targets, phase string, l *LogReport) {
	if l == nil || l.Evidence == 0 {
		return
	}
	ts.stated(phase+": log bytes per evidence", fmt.Sprintf("%.0f (%d evidence)", l.BytesPerEvidence, l.Evidence), l.BytesPerEvidence)
}

// quorumTarget adds the witnesses' target (docs/benchmarks.md) where the
// stack has witnesses: p99 from a checkpoint's signature to the quorum
// cosigning one that holds it ≤ 1 s, every checkpoint of the phase there.
func quorumTarget(ts *targets, phase string, l *LogReport) {
	if l == nil || l.Witnesses == 0 {
		return
	}
	p99 := l.CheckpointToQuorum.P99
	ts.add(phase+": checkpoint signed → witnesses' quorum p99", fmt.Sprintf("≤ 1 s (%d witnesses)", l.Witnesses),
		fmt.Sprintf("%s (%d of %d checkpoints)", secs(p99), l.Witnessed, l.Checkpoints), p99,
		l.Checkpoints > 0 && l.Witnessed == l.Checkpoints && p99 <= 1000)
}

// checkpointTarget adds the log's target (docs/benchmarks.md, Targets,
// final) where the phase's arrival rate was the target's 1,000 evidence/s:
// p99 from intake to being in a signed checkpoint ≤ 1.5 s, every evidence
// in one.
func checkpointTarget(ts *targets, phase string, rate float64, l *LogReport) {
	if l == nil || rate < 990 || rate > 1010 {
		return
	}
	p99 := l.IntakeToCheckpoint.P99
	ts.add(phase+": intake → in a signed checkpoint p99", fmt.Sprintf("≤ 1.5 s at 1,000 evidence/s (checkpoint interval %s)", secs(l.CheckpointIntervalMS)),
		fmt.Sprintf("%s (%d of %d in a checkpoint)", secs(p99), l.InCheckpoint, l.Evidence), p99,
		l.Evidence > 0 && l.InCheckpoint == l.Evidence && p99 <= 1500)
}

// MemoryGrowth compares the batched phase's RSS while the load ran: the
// median of its last fifth over the median of its second fifth (the first
// is warm-up), in percent. Medians, because a single sample lands anywhere
// on the garbage collector's sawtooth. It is the first single-process
// deployment's: the only one whose keeper runs in this process.
func (r *Report) MemoryGrowth() (float64, bool) {
	return r.growth(r.memoryDeployment(), rssOf)
}

// LiveHeapGrowth is MemoryGrowth of the Go heap reachable at each sample's
// last GC: growth there is data kept, not GC headroom or pages not yet
// returned to the OS.
func (r *Report) LiveHeapGrowth() (float64, bool) {
	return r.growth(r.memoryDeployment(), liveOf)
}

// AnonGrowth is MemoryGrowth of the anonymous memory alone (heaps), without
// the binary's pages.
func (r *Report) AnonGrowth() (float64, bool) {
	return r.growth(r.memoryDeployment(), anonOf)
}

func rssOf(s MemorySample) float64  { return s.RSSMiB }
func liveOf(s MemorySample) float64 { return s.LiveMiB }
func anonOf(s MemorySample) float64 { return s.AnonMiB }

// memoryDeployment names the first single-process deployment ("" when the
// report has none named).
func (r *Report) memoryDeployment() string {
	for _, d := range r.Deployments {
		if d.singleProcess() {
			return d.Name
		}
	}
	return ""
}

// growth is the growth of one measure over deployment's batched phase.
func (r *Report) growth(deployment string, of func(MemorySample) float64) (float64, bool) {
	if r.Memory == nil {
		return 0, false
	}
	var ss []MemorySample
	for _, s := range r.Memory.Samples {
		if s.Phase == PhaseBatched && s.Deployment == deployment {
			ss = append(ss, s)
		}
	}
	if len(ss) < 10 {
		return 0, false
	}
	base := median(ss[len(ss)/5:len(ss)*2/5], of)
	late := median(ss[len(ss)*4/5:], of)
	if base <= 0 {
		return 0, false
	}
	return round2((late - base) / base * 100), true
}

func median(ss []MemorySample, of func(MemorySample) float64) float64 {
	vs := make([]float64, len(ss))
	for i, s := range ss {
		vs[i] = of(s)
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

// WriteJSON writes the report as indented JSON to path.
func (r *Report) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// goals are a deployment's saturation targets (docs/benchmarks.md,
// 2026-11-28): the one process on SQLite, or keeper on PostgreSQL, where
// CPU counts the server's too.
type goals struct {
	intakeP99     float64 // ms at the intake phase's rate
	batched, bulk float64 // confirmed/s
	cpuPer1000    float64 // CPU s per 1,000 evidence, batched
}

func goalsFor(deployment string) goals {
	if deployment == DeployPostgres || deployment == DeployMulti {
		return goals{intakeP99: 10, batched: 15000, bulk: 75000, cpuPer1000: 0.13}
	}
	return goals{intakeP99: 5, batched: 25000, bulk: 75000, cpuPer1000: 0.1}
}

// addUpTarget holds the multi-process deployment's batched phase to the
// one process on PostgreSQL measured in the same run: processes add up when
// two APIs and two workers on the same cores reach ≥ 0.9× its rate at
// ≤ 1.15× its CPU per evidence, keeper's and PostgreSQL's.
func (r *Report) addUpTarget(ts *targets, d *DeploymentReport, b *AnchorReport) {
	if d.Name != DeployMulti {
		return
	}
	i := slices.IndexFunc(r.Deployments, func(o *DeploymentReport) bool { return o.Name == DeployPostgres && o.Batched != nil })
	if i < 0 || b.Postgres == nil || r.Deployments[i].Batched.Postgres == nil {
		return
	}
	one := r.Deployments[i].Batched
	rate, cpu := b.ConfirmedPerSec/one.ConfirmedPerSec, (b.CPUPer1000+b.Postgres.CPUPer1000)/(one.CPUPer1000+one.Postgres.CPUPer1000)
	if one.ConfirmedPerSec <= 0 || math.IsNaN(cpu) || math.IsInf(cpu, 0) {
		return
	}
	ts.steady(b.Steady, "processes add up", "≥ 0.9× one process's rate at ≤ 1.15× its CPU per evidence (keeper + PostgreSQL)",
		fmt.Sprintf("%.2f× the rate at %.2f× the CPU", rate, cpu), rate, rate >= 0.9 && cpu <= 1.15)
}

// thousands writes n with a comma every three digits.
func thousands(n float64) string {
	s := strconv.FormatFloat(n, 'f', 0, 64)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
