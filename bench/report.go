package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is everything one run measured. It is written as JSON as is.
type Report struct {
	Version     int            `json:"version"`
	StartedAt   time.Time      `json:"started_at"`
	FinishedAt  time.Time      `json:"finished_at"`
	Machine     Machine        `json:"machine"`
	Settings    Settings       `json:"settings"`
	Chains      []ChainInfo    `json:"chains"`
	LowLoad     *LowLoadReport `json:"low_load,omitempty"`
	Cadence     *CadenceReport `json:"cadence,omitempty"`
	Intake      *IntakeReport  `json:"intake,omitempty"`
	Batched     *AnchorReport  `json:"batched,omitempty"`
	PerEvidence *AnchorReport  `json:"per_evidence,omitempty"`
	Ratio       float64        `json:"batched_over_per_evidence,omitempty"`
	Memory      *MemoryReport  `json:"memory,omitempty"`
	Targets     []Target       `json:"targets"`
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
}

// Target is one of the targets with the value this run measured.
// A benchmark reports; it never fails a build on speed.
type Target struct {
	Name     string  `json:"name"`
	Goal     string  `json:"goal"`
	Measured string  `json:"measured"`
	Value    float64 `json:"value"`
	Met      bool    `json:"met"`
}

func newReport(o Options) *Report {
	return &Report{
		Version: 1, StartedAt: time.Now().UTC(), Machine: machine(),
		Settings: Settings{
			Phases: o.Phases, DurationS: o.Duration.Seconds(), Rate: o.Rate, Clients: o.Concurrency, AnchorRate: o.AnchorRate,
			Chains: o.Config.Chains, BatchMaxItems: o.Config.BatchMaxItems, BatchMaxWaitMS: msOf(o.Config.BatchMaxWait),
			ConfirmPollMS: msOf(o.Config.ConfirmPoll),
		},
	}
}

// Evaluate fills Targets from the measurements present.
func (r *Report) Evaluate() {
	r.Targets = nil
	add := func(name, goal, measured string, v float64, met bool) {
		r.Targets = append(r.Targets, Target{Name: name, Goal: goal, Measured: measured, Value: v, Met: met})
	}
	if in := r.Intake; in != nil {
		add("intake p99", fmt.Sprintf("≤ 10 ms at %.0f req/s, no errors", in.TargetRate),
			fmt.Sprintf("%.2f ms at %.0f req/s, %d errors", in.Latency.P99, in.AchievedRate, in.Errors), in.Latency.P99,
			in.Latency.P99 <= 10 && in.Errors == 0 && in.AchievedRate >= 0.98*in.TargetRate)
		add("intake p95", "< 100 ms", fmt.Sprintf("%.2f ms", in.Latency.P95), in.Latency.P95, in.Latency.P95 < 100)
	}
	if b := r.Batched; b != nil && r.Settings.AnchorRate == 0 { // the saturation targets need an uncapped run
		add("batched confirmed/s", "≥ 2,000/s sustained", fmt.Sprintf("%.0f/s", b.ConfirmedPerSec), b.ConfirmedPerSec, b.ConfirmedPerSec >= 2000)
		add("Temporal actions per evidence", "≤ 0.05 at saturation", fmt.Sprintf("%.4f", b.ActionsPerEv), b.ActionsPerEv, b.ActionsPerEv <= 0.05 && b.SettledEvidence > 0)
		add("chain transactions per evidence", "≤ 0.01 at saturation", fmt.Sprintf("%.4f", b.ChainTxsPerEv), b.ChainTxsPerEv, b.ChainTxsPerEv <= 0.01 && b.SettledEvidence > 0)
	}
	if r.Batched != nil && r.PerEvidence != nil {
		add("batched / per-evidence", "≥ 25×", fmt.Sprintf("%.1f× (%.0f/s vs %.1f/s)", r.Ratio, r.Batched.ConfirmedPerSec, r.PerEvidence.ConfirmedPerSec), r.Ratio, r.Ratio >= 25)
	}
	if l := r.LowLoad; l != nil {
		add("low load intake → submitted p50", "≤ 300 ms", fmt.Sprintf("%.0f ms", l.IntakeToSubmitted.P50), l.IntakeToSubmitted.P50,
			l.IntakeToSubmitted.N > 0 && l.IntakeToSubmitted.P50 <= 300)
		add("low load intake → confirmed", fmt.Sprintf("≤ finality + 1 s = %.1f s", (l.FinalityMS+1000)/1000),
			fmt.Sprintf("p50 %.2f s, p99 %.2f s", l.IntakeToConfirmed.P50/1000, l.IntakeToConfirmed.P99/1000), l.IntakeToConfirmed.P99,
			l.IntakeToConfirmed.N > 0 && l.IntakeToConfirmed.P99 <= l.FinalityMS+1000)
	}
	if c := r.Cadence; c != nil {
		for _, row := range c.Rows {
			worst, ceiling, met := 0.0, 0.0, true
			for ch, n := range row.TxsPerChainPerMin {
				if lim, ok := row.CeilingPerMin[ch]; ok {
					met = met && n <= lim
					ceiling = max(ceiling, lim)
				}
				worst = max(worst, n)
			}
			if ceiling > 0 {
				add(fmt.Sprintf("cadence at %g/s: tx per chain per minute", row.Rate), fmt.Sprintf("≤ 60 ÷ interval + 1 = %.0f", ceiling),
					fmt.Sprintf("%.1f at most", worst), worst, met && row.Confirmed > 0)
			}
			add(fmt.Sprintf("cadence at %g/s: intake → confirmed p99", row.Rate), fmt.Sprintf("≤ finality + interval + 1 s = %.1f s", row.ConfirmedP99Target/1000),
				fmt.Sprintf("%.2f s", row.IntakeToConfirmed.P99/1000), row.IntakeToConfirmed.P99,
				row.IntakeToConfirmed.N > 0 && row.IntakeToConfirmed.P99 <= row.ConfirmedP99Target)
		}
	}
	if g, ok := r.MemoryGrowth(); ok {
		add("memory flat", "≤ 10 % growth after warm-up", fmt.Sprintf("%+.1f %%", g), g, g <= 10)
	}
}

// MemoryGrowth compares the batched phase's RSS while the load ran: the
// median of its last fifth over the median of its second fifth (the first
// is warm-up), in percent. Medians, because a single sample lands anywhere
// on the garbage collector's sawtooth.
func (r *Report) MemoryGrowth() (float64, bool) {
	return r.growth(func(s MemorySample) float64 { return s.RSSMiB })
}

// LiveHeapGrowth is MemoryGrowth of the Go heap reachable at each sample's
// last GC: growth there is data kept, not GC headroom or pages not yet
// returned to the OS.
func (r *Report) LiveHeapGrowth() (float64, bool) {
	return r.growth(func(s MemorySample) float64 { return s.LiveMiB })
}

// AnonGrowth is MemoryGrowth of the anonymous memory alone (heaps), without
// the binary's pages.
func (r *Report) AnonGrowth() (float64, bool) {
	return r.growth(func(s MemorySample) float64 { return s.AnonMiB })
}

func (r *Report) growth(of func(MemorySample) float64) (float64, bool) {
	if r.Memory == nil {
		return 0, false
	}
	var ss []MemorySample
	for _, s := range r.Memory.Samples {
		if s.Phase == PhaseBatched {
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

// WriteTable prints the report as one table a person reads at a glance.
func (r *Report) WriteTable(out io.Writer) {
	m := r.Machine
	fmt.Fprintf(out, "keeper bench — %d CPUs (%s), %s, %s; load average (1 min) %.2f at start, %.2f at end\n",
		m.CPUs, m.CPU, m.GoVersion, m.OS, m.LoadStart, m.LoadEnd)
	var cs []string
	for _, c := range r.Chains {
		where := "remote"
		if c.Local {
			where = "local"
		}
		cs = append(cs, fmt.Sprintf("%s (%s, block %.0f ms, final %d deep = %.1f s)", c.Name, where, c.BlockTimeMS, c.FinalityDepth, c.FinalityMS/1000))
	}
	fmt.Fprintf(out, "chains: %s\n\n", strings.Join(cs, ", "))

	// Each section aligns its own columns.
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	section := func() {
		w.Flush()
		fmt.Fprintln(out)
		w = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	}
	if in := r.Intake; in != nil {
		fmt.Fprintf(w, "INTAKE\topen loop %.0f req/s for %.0f s\t(load %.2f)\n", in.TargetRate, in.DurationS, in.Load1)
		fmt.Fprintf(w, "  accepted\t%d of %d (%.0f/s), %d errors%s\t\n", in.Accepted, in.Requests, in.AchievedRate, in.Errors, errorsBy(in.ErrorsBy))
		fmt.Fprintf(w, "  latency from scheduled send\t%s\t\n", fmtLatency(in.Latency))
		section()
	}
	if r.Batched != nil || r.PerEvidence != nil {
		modes := []*AnchorReport{r.Batched, r.PerEvidence}
		fmt.Fprintf(w, "ANCHORING\tbatched\tper-evidence\n")
		row := func(name string, f func(a *AnchorReport) string) {
			fmt.Fprintf(w, "  %s", name)
			for _, a := range modes {
				if a == nil {
					fmt.Fprint(w, "\t–")
				} else {
					fmt.Fprint(w, "\t"+f(a))
				}
			}
			fmt.Fprintln(w)
		}
		row("batch max items", func(a *AnchorReport) string { return fmt.Sprint(a.BatchMaxItems) })
		row("intake accepted (clients)", func(a *AnchorReport) string {
			return fmt.Sprintf("%d at %.0f/s (%d), %d errors", a.Intake.Accepted, a.Intake.AchievedRate, a.Clients, a.Intake.Errors)
		})
		row("intake latency p50 / p99", func(a *AnchorReport) string {
			return fmt.Sprintf("%.1f / %.1f ms", a.Intake.Latency.P50, a.Intake.Latency.P99)
		})
		row("confirmed/s, steady", func(a *AnchorReport) string {
			return fmt.Sprintf("%.1f (s %.0f–%.0f)", a.ConfirmedPerSec, a.SteadyFromS, a.SteadyToS)
		})
		row("confirmed by the end", func(a *AnchorReport) string {
			return fmt.Sprintf("%d of %d%s", a.Confirmed, a.Intake.Accepted, map[bool]string{true: "", false: " (not drained)"}[a.Drained])
		})
		row("intake → submitted p50 / p99", func(a *AnchorReport) string {
			return fmt.Sprintf("%s / %s", secs(a.IntakeToSubmitted.P50), secs(a.IntakeToSubmitted.P99))
		})
		row("intake → confirmed p50 / p99", func(a *AnchorReport) string {
			return fmt.Sprintf("%s / %s", secs(a.IntakeToConfirmed.P50), secs(a.IntakeToConfirmed.P99))
		})
		row("batches, mean size", func(a *AnchorReport) string { return fmt.Sprintf("%d, %.1f", a.Batches, a.MeanBatchSize) })
		row("Temporal actions / evidence", func(a *AnchorReport) string {
			return fmt.Sprintf("%.4f (%d over %d)", a.ActionsPerEv, a.Actions.Total, a.SettledEvidence)
		})
		row("chain transactions / evidence", func(a *AnchorReport) string {
			return fmt.Sprintf("%.4f (%d)", a.ChainTxsPerEv, a.ChainTxs)
		})
		row("CPU s / 1,000 evidence", func(a *AnchorReport) string {
			return fmt.Sprintf("%.2f (%.0f s in all)", a.CPUPer1000, a.CPUSeconds)
		})
		row("peak RSS", func(a *AnchorReport) string { return fmt.Sprintf("%.0f MiB", a.PeakRSSMiB) })
		row("load average (1 min)", func(a *AnchorReport) string { return fmt.Sprintf("%.2f", a.Load1) })
		if r.Ratio > 0 {
			fmt.Fprintf(w, "  batched ÷ per-evidence\t%.1f×\t\n", r.Ratio)
		}
		section()
	}
	if l := r.LowLoad; l != nil {
		fmt.Fprintf(w, "LOW LOAD\tone evidence every %.0f ms for %.0f s\t(load %.2f)\n", l.EveryMS, l.DurationS, l.Load1)
		fmt.Fprintf(w, "  intake → submitted (every chain)\t%s\t\n", fmtLatency(l.IntakeToSubmitted))
		for _, c := range r.Chains {
			if s, ok := l.PerChainSubmitted[c.Name]; ok {
				fmt.Fprintf(w, "    %s\t%s\t\n", c.Name, fmtLatency(s))
			}
		}
		fmt.Fprintf(w, "  intake → confirmed\tp50 %s, p99 %s\t\n", secs(l.IntakeToConfirmed.P50), secs(l.IntakeToConfirmed.P99))
		fmt.Fprintf(w, "  … minus finality (%.1f s)\tp50 %s, p99 %s\t\n", l.FinalityMS/1000, secs(l.OverFinality.P50), secs(l.OverFinality.P99))
		section()
	}
	if c := r.Cadence; c != nil && len(c.Rows) > 0 {
		fmt.Fprintf(w, "CADENCE\tevidence/s\tfor\tconfirmed\ttx per evidence\ttx per chain per min (ceiling)\tactions per evidence\tintake → confirmed p50 / p99 (target p99)\n")
		for _, row := range c.Rows {
			var per []string
			for _, ch := range r.Chains {
				if n, ok := row.TxsPerChainPerMin[ch.Name]; ok {
					per = append(per, fmt.Sprintf("%s %.1f (%.0f)", ch.Name, n, row.CeilingPerMin[ch.Name]))
				}
			}
			fmt.Fprintf(w, "  \t%g\t%.0f s\t%d of %d\t%.4f\t%s\t%.2f\t%s / %s (%s)\n", row.Rate, row.DurationS, row.Confirmed, row.Accepted,
				row.TxsPerEv, strings.Join(per, ", "), row.ActionsPerEv, secs(row.IntakeToConfirmed.P50), secs(row.IntakeToConfirmed.P99), secs(row.ConfirmedP99Target))
		}
		section()
	}
	if r.Memory != nil {
		g, ok := r.MemoryGrowth()
		growth := "n/a (batched phase too short)"
		if ok {
			a, _ := r.AnonGrowth()
			l, _ := r.LiveHeapGrowth()
			growth = fmt.Sprintf("%+.1f %% over the batched phase (anonymous memory alone %+.1f %%, live Go heap %+.1f %%)", g, a, l)
		}
		fmt.Fprintf(w, "MEMORY\tpeak RSS %.0f MiB; growth %s\t\n", r.Memory.PeakRSSMiB, growth)
		section()
	}
	if len(r.Targets) > 0 {
		fmt.Fprintf(w, "TARGETS\tgoal\tmeasured\n")
		for _, t := range r.Targets {
			mark := "met"
			if !t.Met {
				mark = "MISSED"
			}
			fmt.Fprintf(w, "  %s\t%s\t%s  %s\n", t.Name, t.Goal, t.Measured, mark)
		}
	}
	w.Flush()
}

func fmtLatency(l Latency) string {
	if l.N == 0 {
		return "no samples"
	}
	return fmt.Sprintf("p50 %s  p95 %s  p99 %s  p99.9 %s  max %s  (n=%d)", ms(l.P50), ms(l.P95), ms(l.P99), ms(l.P999), ms(l.Max), l.N)
}

func ms(v float64) string {
	if v >= 100 {
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}

func secs(v float64) string {
	if v < 1000 && v > -1000 {
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.2f s", v/1000)
}

func errorsBy(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s: %d", k, m[k]))
	}
	return " (" + strings.Join(parts, ", ") + ")"
}
