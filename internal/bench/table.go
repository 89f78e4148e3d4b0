package bench

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the report as one table a person reads at a glance:
// with several deployments, a column per deployment.
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
	fmt.Fprintf(out, "chains: %s\n", strings.Join(cs, ", "))
	for _, d := range r.Deployments {
		parts := []string{d.Processes}
		if d.Store != "" {
			parts = append(parts, "keeper's store "+d.Store, "Temporal "+d.Temporal)
		}
		fmt.Fprintf(out, "deployment %s: %s\n", d.Name, strings.Join(parts, "; "))
	}
	for _, sp := range r.ShortPhases {
		fmt.Fprintf(out, "WARNING: %s\n", sp)
	}
	fmt.Fprintln(out)

	t := &table{out: out, w: tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)}
	r.intakeSection(t)
	r.anchoringSections(t)
	r.tilesSection(t)
	for _, d := range r.Deployments {
		r.lowLoadSection(t, d)
		r.cadenceSection(t, d)
	}
	r.memorySection(t)
	if len(r.Targets) > 0 {
		fmt.Fprintf(t.w, "TARGETS\tgoal\tmeasured\n")
		for _, g := range r.Targets {
			fmt.Fprintf(t.w, "  %s%s\t%s\t%s  %s\n", r.prefix(g.Deployment), g.Name, g.Goal, g.Measured, g.mark())
		}
	}
	t.w.Flush()
}

// mark is how the table shows a target's verdict: a miss stands out.
func (g Target) mark() string {
	switch g.Verdict {
	case VerdictMissed:
		return "MISSED"
	case "":
		if g.Met {
			return VerdictMet
		}
		return "MISSED"
	}
	return g.Verdict
}

// table writes sections that each align their own columns.
type table struct {
	out io.Writer
	w   *tabwriter.Writer
}

func (t *table) section() {
	t.w.Flush()
	fmt.Fprintln(t.out)
	t.w = tabwriter.NewWriter(t.out, 0, 0, 2, ' ', 0)
}

// columns writes a header and then rows whose cells are f of each column's
// value, "–" where a column has none.
func columns[T any](t *table, title string, heads []string, vals []*T, rows []row[T]) {
	fmt.Fprintf(t.w, "%s\t%s\n", title, strings.Join(heads, "\t"))
	for _, rw := range rows {
		fmt.Fprintf(t.w, "  %s", rw.name)
		for _, v := range vals {
			if v == nil {
				fmt.Fprint(t.w, "\t–")
			} else {
				fmt.Fprint(t.w, "\t"+rw.f(v))
			}
		}
		fmt.Fprintln(t.w)
	}
	t.section()
}

type row[T any] struct {
	name string
	f    func(*T) string
}

// prefix names the deployment before a line's own name when the report
// holds several.
func (r *Report) prefix(deployment string) string {
	if len(r.Deployments) < 2 {
		return ""
	}
	return deployment + ": "
}

func (r *Report) intakeSection(t *table) {
	var heads []string
	var vals []*IntakeReport
	for _, d := range r.Deployments {
		if d.Intake != nil {
			heads, vals = append(heads, d.Name), append(vals, d.Intake)
		}
	}
	if len(vals) == 0 {
		return
	}
	columns(t, "INTAKE", heads, vals, []row[IntakeReport]{
		{"open loop", func(in *IntakeReport) string {
			return fmt.Sprintf("%.0f req/s for %.0f s", in.TargetRate, in.DurationS)
		}},
		{"accepted", func(in *IntakeReport) string {
			return fmt.Sprintf("%d of %d (%.0f/s), %d errors%s", in.Accepted, in.Requests, in.AchievedRate, in.Errors, errorsBy(in.ErrorsBy))
		}},
		{"latency from scheduled send p50 / p95 / p99", func(in *IntakeReport) string {
			return fmt.Sprintf("%s / %s / %s", ms(in.Latency.P50), ms(in.Latency.P95), ms(in.Latency.P99))
		}},
		{"… p99.9 / max (n)", func(in *IntakeReport) string {
			return fmt.Sprintf("%s / %s (%d)", ms(in.Latency.P999), ms(in.Latency.Max), in.Latency.N)
		}},
		{"where the time went, mean ms: all requests", func(in *IntakeReport) string { return in.Steps.All.String() }},
		{"… the slowest 1 %", func(in *IntakeReport) string { return in.Steps.Slowest.String() }},
		{"intake → in a signed checkpoint p50 / p99 / max", func(in *IntakeReport) string { return logLatency(in.Log) }},
		{"log bytes / evidence", func(in *IntakeReport) string { return logBytes(in.Log) }},
		{"load average (1 min)", func(in *IntakeReport) string { return fmt.Sprintf("%.2f", in.Load1) }},
	})
}

func (r *Report) tilesSection(t *table) {
	var heads []string
	var vals []*TilesReport
	for _, d := range r.Deployments {
		if d.Tiles != nil {
			heads, vals = append(heads, d.Name), append(vals, d.Tiles)
		}
	}
	if len(vals) == 0 {
		return
	}
	columns(t, "TILES (GET /log/tile/…)", heads, vals, []row[TilesReport]{
		{"clients, back to back", func(tl *TilesReport) string { return fmt.Sprintf("%d for %.0f s", tl.Clients, tl.DurationS) }},
		{"log read", func(tl *TilesReport) string {
			return fmt.Sprintf("%d entries: %d full level-0 tiles at random, %.0f %% partial (%s)", tl.LogSize, tl.FullTiles, tl.PartialShare*100, strings.Join(tl.PartialTiles, ", "))
		}},
		{"reads/s", func(tl *TilesReport) string {
			return fmt.Sprintf("%.0f (%d reads, %d errors%s)", tl.ReadsPerSec, tl.Reads, tl.Errors, errorsBy(tl.ErrorsBy))
		}},
		{"latency p50 / p99 / max", func(tl *TilesReport) string {
			return fmt.Sprintf("%s / %s / %s", ms(tl.Latency.P50), ms(tl.Latency.P99), ms(tl.Latency.Max))
		}},
		{"CPU s / 1,000 reads, keeper", func(tl *TilesReport) string {
			return fmt.Sprintf("%.3f (%.0f s in all)", tl.CPUPer1000, tl.CPUSeconds)
		}},
		{"load average (1 min)", func(tl *TilesReport) string { return fmt.Sprintf("%.2f", tl.Load1) }},
	})
}

// anchoringSections prints one deployment's two modes side by side, or,
// with several deployments, a section per mode with a column per
// deployment; then each multi-process phase's processes.
func (r *Report) anchoringSections(t *table) {
	if len(r.Deployments) == 1 {
		d := r.Deployments[0]
		if d.Batched != nil || d.PerEvidence != nil || d.Bulk != nil {
			rows := anchorRows()
			if d.Ratio > 0 {
				rows = append(rows, row[AnchorReport]{"batched ÷ per-evidence", func(a *AnchorReport) string {
					if a.Mode == PhaseBatched {
						return fmt.Sprintf("%.1f×", d.Ratio)
					}
					return ""
				}})
			}
			heads, vals := []string{PhaseBatched, PhasePerEvidence}, []*AnchorReport{d.Batched, d.PerEvidence}
			if d.Bulk != nil {
				heads, vals = append(heads, PhaseBulk), append(vals, d.Bulk)
			}
			columns(t, "ANCHORING", heads, vals, rows)
		}
	} else {
		for _, mode := range []string{PhaseBatched, PhaseBulk, PhasePerEvidence} {
			var heads []string
			var vals []*AnchorReport
			for _, d := range r.Deployments {
				heads, vals = append(heads, d.Name), append(vals, d.anchoring(mode))
			}
			if slices.ContainsFunc(vals, func(a *AnchorReport) bool { return a != nil }) {
				columns(t, "ANCHORING "+mode, heads, vals, anchorRows())
			}
		}
	}
	for _, d := range r.Deployments {
		for _, mode := range []string{PhaseBatched, PhaseBulk, PhasePerEvidence} {
			if a := d.anchoring(mode); a != nil && len(a.Processes) > 0 {
				processSection(t, d.Name, a)
			}
		}
	}
}

func (d *DeploymentReport) anchoring(mode string) *AnchorReport {
	switch mode {
	case PhaseBatched:
		return d.Batched
	case PhaseBulk:
		return d.Bulk
	}
	return d.PerEvidence
}

func anchorRows() []row[AnchorReport] {
	return []row[AnchorReport]{
		{"batch max items", func(a *AnchorReport) string { return fmt.Sprint(a.BatchMaxItems) }},
		{"intake accepted (clients)", func(a *AnchorReport) string {
			return fmt.Sprintf("%d at %.0f/s (%d), %d errors", a.Intake.Accepted, a.Intake.AchievedRate, a.Clients, a.Intake.Errors)
		}},
		{"intake latency p50 / p99", func(a *AnchorReport) string {
			return fmt.Sprintf("%.1f / %.1f ms", a.Intake.Latency.P50, a.Intake.Latency.P99)
		}},
		{"confirmed/s, steady", func(a *AnchorReport) string {
			if !a.Steady {
				return fmt.Sprintf("%.1f (s %.0f–%.0f; not steady: the phase was too short)", a.ConfirmedPerSec, a.SteadyFromS, a.SteadyToS)
			}
			return fmt.Sprintf("%.1f (s %.0f–%.0f)", a.ConfirmedPerSec, a.SteadyFromS, a.SteadyToS)
		}},
		{"confirmed by the end", func(a *AnchorReport) string {
			return fmt.Sprintf("%d of %d%s", a.Confirmed, a.Intake.Accepted, map[bool]string{true: "", false: " (not drained)"}[a.Drained])
		}},
		{"intake → submitted p50 / p99", func(a *AnchorReport) string {
			return fmt.Sprintf("%s / %s", secs(a.IntakeToSubmitted.P50), secs(a.IntakeToSubmitted.P99))
		}},
		{"intake → confirmed p50 / p99", func(a *AnchorReport) string {
			return fmt.Sprintf("%s / %s", secs(a.IntakeToConfirmed.P50), secs(a.IntakeToConfirmed.P99))
		}},
		{"intake → in a signed checkpoint p50 / p99 / max", func(a *AnchorReport) string { return logLatency(a.Log) }},
		{"batches, mean size", func(a *AnchorReport) string { return fmt.Sprintf("%d, %.1f", a.Batches, a.MeanBatchSize) }},
		{"Temporal actions / evidence", func(a *AnchorReport) string {
			return fmt.Sprintf("%.4f (%d over %d)", a.ActionsPerEv, a.Actions.Total, a.SettledEvidence)
		}},
		{"chain transactions / evidence", func(a *AnchorReport) string {
			return fmt.Sprintf("%.4f (%d)", a.ChainTxsPerEv, a.ChainTxs)
		}},
		{"store bytes / evidence (and chain), the log included", func(a *AnchorReport) string {
			if a.Log == nil {
				return fmt.Sprintf("%.0f (%.0f): %s over %d", a.BytesPerEvidence, a.BytesPerEvidenceChain, mib(a.StoreBytes), a.StoredEvidence)
			}
			return fmt.Sprintf("%.0f (%.0f, of which the log %.0f): %s over %d", a.BytesPerEvidence, a.BytesPerEvidenceChain, a.LogBytesPerEvidenceChain, mib(a.StoreBytes), a.StoredEvidence)
		}},
		{"log bytes / evidence", func(a *AnchorReport) string { return logBytes(a.Log) }},
		{"CPU s / 1,000 evidence, keeper", func(a *AnchorReport) string {
			return fmt.Sprintf("%.2f (%.0f s in all)", a.CPUPer1000, a.CPUSeconds)
		}},
		{"CPU s / 1,000 evidence, PostgreSQL", func(a *AnchorReport) string {
			if a.Postgres == nil {
				return "–"
			}
			return fmt.Sprintf("%.2f (%.0f s in all)", a.Postgres.CPUPer1000, a.Postgres.CPUSeconds)
		}},
		{"peak RSS", func(a *AnchorReport) string {
			if len(a.Processes) > 0 {
				return fmt.Sprintf("%.0f MiB (keeper's processes together)", a.PeakRSSMiB)
			}
			return fmt.Sprintf("%.0f MiB", a.PeakRSSMiB)
		}},
		{"load average (1 min)", func(a *AnchorReport) string { return fmt.Sprintf("%.2f", a.Load1) }},
	}
}

// processSection prints what each process of a multi-process phase used.
func processSection(t *table, deployment string, a *AnchorReport) {
	fmt.Fprintf(t.w, "PROCESSES (%s, %s)\tCPU s / 1,000 evidence\tCPU s\tpeak RSS\n", deployment, a.Mode)
	for _, p := range a.Processes {
		fmt.Fprintf(t.w, "  %s\t%.2f\t%.1f\t%.0f MiB\n", p.Name, p.CPUPer1000, p.CPUSeconds, p.PeakRSSMiB)
	}
	if pg := a.Postgres; pg != nil {
		fmt.Fprintf(t.w, "  PostgreSQL server\t%.2f\t%.1f\t–\n", pg.CPUPer1000, pg.CPUSeconds)
	}
	t.section()
}

func (r *Report) lowLoadSection(t *table, d *DeploymentReport) {
	l := d.LowLoad
	if l == nil {
		return
	}
	fmt.Fprintf(t.w, "LOW LOAD%s\tone evidence every %.0f ms for %.0f s\t(load %.2f)\n", r.suffix(d), l.EveryMS, l.DurationS, l.Load1)
	fmt.Fprintf(t.w, "  intake → submitted (every chain)\t%s\t\n", fmtLatency(l.IntakeToSubmitted))
	for _, c := range r.Chains {
		if s, ok := l.PerChainSubmitted[c.Name]; ok {
			fmt.Fprintf(t.w, "    %s\t%s\t\n", c.Name, fmtLatency(s))
		}
	}
	fmt.Fprintf(t.w, "  intake → confirmed\tp50 %s, p99 %s\t\n", secs(l.IntakeToConfirmed.P50), secs(l.IntakeToConfirmed.P99))
	fmt.Fprintf(t.w, "  … minus finality (%.1f s)\tp50 %s, p99 %s\t\n", l.FinalityMS/1000, secs(l.OverFinality.P50), secs(l.OverFinality.P99))
	t.section()
}

func (r *Report) cadenceSection(t *table, d *DeploymentReport) {
	c := d.Cadence
	if c == nil || len(c.Rows) == 0 {
		return
	}
	fmt.Fprintf(t.w, "CADENCE%s\tevidence/s\tfor\tconfirmed\ttx per evidence\ttx per chain per min\tbatches per chain (full) of the ceiling\tactions per evidence\tintake → confirmed p50 / p99 (target p99)\tfinalizing block → confirmed p50 / p99\tintake → in a signed checkpoint p50 / p99 / max\tlog bytes / evidence\n", r.suffix(d))
	for _, row := range c.Rows {
		var per, batches []string
		for _, ch := range r.Chains {
			if n, ok := row.TxsPerChainPerMin[ch.Name]; ok {
				per = append(per, fmt.Sprintf("%s %.1f", ch.Name, n))
			}
			if lim, ok := row.BatchCeiling[ch.Name]; ok {
				batches = append(batches, fmt.Sprintf("%s %d (%d) of %d", ch.Name, row.Batches[ch.Name], row.FullBatches[ch.Name], lim))
			}
		}
		if len(batches) == 0 {
			batches = []string{"no interval"}
		}
		fmt.Fprintf(t.w, "  \t%g\t%.0f s\t%d of %d\t%.4f\t%s\t%s\t%.2f\t%s / %s (%s)\t%s\t%s\t%s\n", row.Rate, row.DurationS, row.Confirmed, row.Accepted,
			row.TxsPerEv, strings.Join(per, ", "), strings.Join(batches, ", "), row.ActionsPerEv, secs(row.IntakeToConfirmed.P50), secs(row.IntakeToConfirmed.P99), secs(row.ConfirmedP99Target),
			finalToConfirmed(row), logLatency(row.Log), logBytes(row.Log))
	}
	t.section()
	cadencePathSection(t, r.suffix(d), c.Rows)
}

// finalToConfirmed is a cadence row's finalizing block → confirmed, or why
// it has none.
func finalToConfirmed(row CadenceRow) string {
	if row.Path == nil {
		return "– (chains not watched)"
	}
	return fmt.Sprintf("%s / %s", secs(row.FinalToConfirmed.P50), secs(row.FinalToConfirmed.P99))
}

// cadencePathSection prints where each rate's intake → confirmed went,
// step by step along each evidence's last anchor to become final, with a
// column per rate.
func cadencePathSection(t *table, suffix string, rows []CadenceRow) {
	var heads []string
	var vals []*CadencePath
	for _, row := range rows {
		if row.Path != nil {
			heads, vals = append(heads, fmt.Sprintf("%g/s (%d evidence)", row.Rate, row.Path.Evidence)), append(vals, row.Path)
		}
	}
	if len(vals) == 0 {
		return
	}
	step := func(name string, of func(*CadencePath) Latency) row[CadencePath] {
		return row[CadencePath]{name, func(p *CadencePath) string { l := of(p); return fmt.Sprintf("%s / %s", secs(l.P50), secs(l.P99)) }}
	}
	columns(t, "CADENCE PATH"+suffix+", p50 / p99 per step, along the anchor final last", heads, vals, []row[CadencePath]{
		step("intake → batch formed", func(p *CadencePath) Latency { return p.IntakeToFormed }),
		step("→ transaction journaled", func(p *CadencePath) Latency { return p.FormedToJournaled }),
		step("→ its block (slot) appeared", func(p *CadencePath) Latency { return p.JournaledToIncluded }),
		step("→ the block making it final appeared", func(p *CadencePath) Latency { return p.IncludedToFinal }),
		step("→ ConfirmAnchor completed", func(p *CadencePath) Latency { return p.FinalToCompleted }),
		step("→ workflow task started", func(p *CadencePath) Latency { return p.CompletedToTask }),
		step("→ RecordReceipts stored it", func(p *CadencePath) Latency { return p.TaskToRecorded }),
		step("→ evidence confirmed", func(p *CadencePath) Latency { return p.RecordedToConfirmed }),
	})
}

// suffix names the deployment after a section's title when the report
// holds several.
func (r *Report) suffix(d *DeploymentReport) string {
	if len(r.Deployments) < 2 {
		return ""
	}
	return " (" + d.Name + ")"
}

func (r *Report) memorySection(t *table) {
	if r.Memory == nil {
		return
	}
	fmt.Fprintf(t.w, "MEMORY\tpeak RSS %.0f MiB (this process, the bench's analysis of each phase included)\t\n", r.Memory.PeakRSSMiB)
	for _, d := range r.Deployments {
		if !d.singleProcess() {
			continue
		}
		growth := "n/a (batched phase too short)"
		if g, ok := r.growth(d.Name, rssOf); ok {
			a, _ := r.growth(d.Name, anonOf)
			l, _ := r.growth(d.Name, liveOf)
			growth = fmt.Sprintf("%+.1f %% over the batched phase (anonymous memory alone %+.1f %%, live Go heap %+.1f %%)", g, a, l)
		}
		fmt.Fprintf(t.w, "  %sgrowth\t%s\t\n", r.prefix(d.Name), growth)
	}
	t.section()
}

// logLatency is a phase's intake → checkpoint latency, and how many of its
// evidence made it into a checkpoint.
func logLatency(l *LogReport) string {
	if l == nil {
		return "–"
	}
	c := l.IntakeToCheckpoint
	out := fmt.Sprintf("%s / %s / %s (%d of %d; interval %s, %d checkpoints)", secs(c.P50), secs(c.P99), secs(c.Max), l.InCheckpoint, l.Evidence,
		secs(l.CheckpointIntervalMS), l.Checkpoints)
	if l.Witnesses > 0 {
		q := l.CheckpointToQuorum
		out += fmt.Sprintf("; signed → %d witnesses' quorum %s / %s / %s (%d of %d)", l.Witnesses, secs(q.P50), secs(q.P99), secs(q.Max), l.Witnessed, l.Checkpoints)
	}
	return out
}

func logBytes(l *LogReport) string {
	if l == nil {
		return "–"
	}
	return fmt.Sprintf("%.0f (%s over %d)", l.BytesPerEvidence, mib(l.Bytes), l.Evidence)
}

func mib(b int64) string {
	return fmt.Sprintf("%+.1f MiB", float64(b)/(1<<20))
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
