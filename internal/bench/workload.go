package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"text/tabwriter"
	"time"
)

// WorkloadReport is what `keeper bench backfill` and `keeper bench epoch`
// measure: one workload run end to end through the API on a fresh embedded
// stack, with the same cost columns as the anchoring report.
type WorkloadReport struct {
	Version    int                `json:"version"`
	Workload   string             `json:"workload"` // "backfill" or "epoch"
	StartedAt  time.Time          `json:"started_at"`
	FinishedAt time.Time          `json:"finished_at"`
	Machine    Machine            `json:"machine"`
	Settings   map[string]any     `json:"settings"`
	Backfill   []BackfillMeasured `json:"backfill,omitempty"`
	Epoch      *EpochMeasured     `json:"epoch,omitempty"`
	Actions    Actions            `json:"temporal_actions"`
	CPUSeconds float64            `json:"cpu_seconds"` // the whole process, while the workload ran
	PeakRSSMiB float64            `json:"peak_rss_mib"`
	Load1      float64            `json:"load_average_1m"`
}

func newWorkloadReport(name string, settings map[string]any) *WorkloadReport {
	return &WorkloadReport{Version: 1, Workload: name, StartedAt: time.Now().UTC(), Machine: machine(), Settings: settings}
}

// finish records the process's cost since cpu0 and the run's end.
func (r *WorkloadReport) finish(cpu0 float64) {
	cpu, _ := cpuSeconds()
	r.CPUSeconds = round2(cpu - cpu0)
	_, r.PeakRSSMiB, _ = memory()
	r.Load1 = loadAverage()
	r.FinishedAt = time.Now().UTC()
	r.Machine.LoadEnd = r.Load1
}

// WriteJSON writes the report as indented JSON to path.
func (r *WorkloadReport) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// WriteTable prints the report as one table, in the anchoring report's style.
func (r *WorkloadReport) WriteTable(out io.Writer) {
	m := r.Machine
	fmt.Fprintf(out, "keeper bench %s — %d CPUs (%s), %s, %s; load average (1 min) %.2f at start, %.2f at end\n\n",
		r.Workload, m.CPUs, m.CPU, m.GoVersion, m.OS, m.LoadStart, m.LoadEnd)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	switch {
	case r.Backfill != nil:
		fmt.Fprintf(w, "BACKFILL\tstatus\tscanned\ttransfers stored\tscan time\tscan rate\tto done (reclassified, reconciled)\n")
		for _, b := range r.Backfill {
			fmt.Fprintf(w, "  %s\t%s\t%d %s\t%d\t%.2f s\t%.0f %s/s, %.0f transfers/s\t%.2f s, reconciled %s\n",
				b.Network, b.Status, b.Scanned, b.Unit, b.Transfers, b.ScanS, b.UnitsPerSec, b.Unit, b.TransfersPerSec, b.DoneS, yesNo(b.Reconciled))
		}
	case r.Epoch != nil:
		e := r.Epoch
		fmt.Fprintf(w, "EPOCH\t%d accounts, pool %s, usage from a source URL (%.1f MiB)\n", e.Accounts, e.Pool, e.SourceMiB)
		fmt.Fprintf(w, "  status\t%s\n", e.Status)
		fmt.Fprintf(w, "  queued → started\t%.2f s\n", e.Stages["start"])
		fmt.Fprintf(w, "  seal (fetch, canonicalise, hash)\t%.2f s\n", e.Stages["seal"])
		fmt.Fprintf(w, "  compute (split, conservation check)\t%.2f s\n", e.Stages["compute"])
		fmt.Fprintf(w, "  artifacts (run.json, commitment)\t%.2f s\n", e.Stages["artifacts"])
		fmt.Fprintf(w, "  intents to the ledger\t%.2f s (%d, %.0f/s)\n", e.Stages["intents"], e.Intents, e.IntentsPerSec)
		fmt.Fprintf(w, "  commitment handed to anchoring\t%.2f s after the intents\n", e.Stages["anchor"])
		fmt.Fprintf(w, "  request → computed (artifacts written)\t%.2f s\n", e.ComputedS)
		fmt.Fprintf(w, "  request → completed\t%.2f s\n", e.CompletedS)
	}
	w.Flush()
	fmt.Fprintln(out)
	w = tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	a := r.Actions
	fmt.Fprintf(w, "COST\n")
	fmt.Fprintf(w, "  Temporal actions\t%d (%d workflows: %d starts, %d activity attempts, %d timers, %d child workflows, %d upserts, %d heartbeats)\n",
		a.Total, a.Workflows, a.WorkflowStarts, a.ActivityAttempts, a.Timers, a.ChildWorkflows, a.SearchAttrUpserts, a.Heartbeats)
	fmt.Fprintf(w, "  CPU s (whole process)\t%.2f\n", r.CPUSeconds)
	fmt.Fprintf(w, "  peak RSS\t%.0f MiB\n", r.PeakRSSMiB)
	fmt.Fprintf(w, "  load average (1 min)\t%.2f\n", r.Load1)
	w.Flush()
}

func yesNo(b *bool) string {
	switch {
	case b == nil:
		return "–"
	case *b:
		return "yes"
	}
	return "no"
}

// apiJSON sends a request to the stack's API and decodes a JSON answer into
// v, returning the status code.
func apiJSON(ctx context.Context, method, url string, body []byte, v any) (int, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, err
	}
	if resp.StatusCode >= 300 {
		return resp.StatusCode, fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, bytes.TrimSpace(raw))
	}
	return resp.StatusCode, json.Unmarshal(raw, v)
}

// poll calls check every interval until it reports done, ctx ends or limit
// passes.
func poll(ctx context.Context, every, limit time.Duration, what string, check func() (bool, error)) error {
	deadline := time.Now().Add(limit)
	for {
		done, err := check()
		if err != nil || done {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("bench: %s not done after %s", what, limit)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(every):
		}
	}
}
