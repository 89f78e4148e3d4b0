package anchor

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keeperhq/keeper/internal/store"
)

// The anchoring queue and each chain's progress, read from the store: as
// gauges at scrape time (so every API node reports the same numbers), and
// as /readyz's "anchoring" detail.

// Counts is the store as the anchoring gauges need it, read at scrape time
// (*store.Store).
type Counts interface {
	PendingCount(ctx context.Context) (int, error)
	PendingChains(ctx context.Context) (map[string]store.PendingInfo, error)
	UnfinishedBatches(ctx context.Context) ([]store.BatchCount, error)
	ProgressOf(ctx context.Context, chains []string, pending map[string]store.PendingInfo) (map[string]store.ChainProgress, error)
}

var (
	pendingDesc = prometheus.NewDesc("keeper_evidence_pending",
		"Evidence stored but not yet in a batch.", nil, nil)
	anchorQueueDesc = prometheus.NewDesc("keeper_anchor_queue_depth",
		"Evidence not yet anchored, by chain and status: pending (waiting for a batch), batched (in a batch not yet broadcast), submitted (broadcast, waiting for finality).",
		[]string{"chain", "status"}, nil)
	oldestPendingDesc = prometheus.NewDesc("keeper_anchor_oldest_pending_age_seconds",
		"Age of the oldest evidence waiting for a batch, by chain (0 when none waits).", []string{"chain"}, nil)
	oldestUnconfirmedDesc = prometheus.NewDesc("keeper_anchor_oldest_unconfirmed_age_seconds",
		"Age of the oldest evidence not yet confirmed on a chain (pending, batched or submitted; dead letters aside), by chain (0 when none waits). Transient failures are retried without end: alert on this, not on dead letters (docs/retries.md).", []string{"chain"}, nil)
	lastSuccessDesc = prometheus.NewDesc("keeper_chain_last_success_timestamp_seconds",
		"Unix time at which the chain's last anchor became final (receipts recorded), by chain (0: never). time() minus it is how long the chain has gone without a success.", []string{"chain"}, nil)
)

// NewCollector reports the anchoring gauges read from st at scrape time:
// keeper_evidence_pending, keeper_anchor_queue_depth, the oldest pending
// and unconfirmed evidence's ages and each chain's last success. The series
// of the configured chains show 0 rather than nothing. The node registers
// it beside the API's metrics.
func NewCollector(st Counts, chains []string) prometheus.Collector {
	return collector{st: st, chains: chains}
}

type collector struct {
	st     Counts
	chains []string
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{pendingDesc, anchorQueueDesc, oldestPendingDesc, oldestUnconfirmedDesc, lastSuccessDesc} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := c.st.PendingCount(ctx)
	if err != nil {
		n = -1
	}
	ch <- prometheus.MustNewConstMetric(pendingDesc, prometheus.GaugeValue, float64(n))
	c.collectAnchoring(ctx, ch)
}

func (c collector) collectAnchoring(ctx context.Context, ch chan<- prometheus.Metric) {
	pending, err := c.st.PendingChains(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(anchorQueueDesc, err)
		return
	}
	batches, err := c.st.UnfinishedBatches(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(anchorQueueDesc, err)
		return
	}
	type key struct{ chain, status string }
	depth := map[key]int{}
	for _, name := range c.chains {
		for _, s := range []store.Status{store.StatusPending, store.StatusBatched, store.StatusSubmitted} {
			depth[key{name, string(s)}] = 0
		}
	}
	now := time.Now()
	oldest := map[string]float64{}
	for _, name := range c.chains {
		oldest[name] = 0
	}
	for name, p := range pending {
		depth[key{name, string(store.StatusPending)}] = p.Count
		oldest[name] = max(now.Sub(p.Oldest).Seconds(), 0)
	}
	for _, b := range batches {
		status := store.StatusBatched // formed or started: not broadcast yet
		if b.State == store.BatchSubmitted {
			status = store.StatusSubmitted
		}
		depth[key{b.Chain, string(status)}] += b.Evidence
	}
	for k, n := range depth {
		ch <- prometheus.MustNewConstMetric(anchorQueueDesc, prometheus.GaugeValue, float64(n), k.chain, k.status)
	}
	for name, age := range oldest {
		ch <- prometheus.MustNewConstMetric(oldestPendingDesc, prometheus.GaugeValue, age, name)
	}
	c.collectProgress(ctx, ch, now, pending)
}

// collectProgress reports each configured chain's oldest unconfirmed
// evidence and last success.
func (c collector) collectProgress(ctx context.Context, ch chan<- prometheus.Metric, now time.Time, pending map[string]store.PendingInfo) {
	progress, err := c.st.ProgressOf(ctx, c.chains, pending)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(oldestUnconfirmedDesc, err)
		return
	}
	for name, p := range progress {
		ch <- prometheus.MustNewConstMetric(oldestUnconfirmedDesc, prometheus.GaugeValue, ageSeconds(now, p.OldestUnconfirmed), name)
		last := 0.0
		if !p.LastConfirmed.IsZero() {
			last = float64(p.LastConfirmed.UnixMilli()) / 1000
		}
		ch <- prometheus.MustNewConstMetric(lastSuccessDesc, prometheus.GaugeValue, last, name)
	}
}

// ageSeconds is how long before now t was, 0 for a zero t.
func ageSeconds(now, t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return max(now.Sub(t).Seconds(), 0)
}

// anchoringView is one chain's entry under /readyz's "anchoring": the ages
// an operator watches now that transient failures are retried without end.
// It informs; it never makes the node unready (an RPC outage must not stop
// intake: the evidence waits and is anchored when the chain is back).
type anchoringView struct {
	OldestUnconfirmedAge float64 `json:"oldest_unconfirmed_age_seconds"`
	LastSuccessAt        string  `json:"last_success_at,omitempty"`
	LastSuccessAge       float64 `json:"last_success_age_seconds,omitempty"`
}

// ReadyDetail is what the evidence routes add to /readyz's answer:
// "anchoring", each configured chain's progress, or what kept it from
// being read. It informs and never fails readiness.
func (h *HTTP) ReadyDetail(ctx context.Context) map[string]any {
	return map[string]any{"anchoring": h.anchoring(ctx)}
}

// anchoring is each configured chain's progress, or what kept it from being
// read.
func (h *HTTP) anchoring(ctx context.Context) any {
	progress, err := h.Store.Progress(ctx, h.Chains)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return map[string]string{"error": "reading the anchoring progress timed out"}
		}
		return map[string]string{"error": "could not read the anchoring progress"}
	}
	now := time.Now()
	out := make(map[string]anchoringView, len(progress))
	for chain, p := range progress {
		v := anchoringView{OldestUnconfirmedAge: ageSeconds(now, p.OldestUnconfirmed)}
		if !p.LastConfirmed.IsZero() {
			v.LastSuccessAt = p.LastConfirmed.UTC().Format(time.RFC3339Nano)
			v.LastSuccessAge = ageSeconds(now, p.LastConfirmed)
		}
		out[chain] = v
	}
	return out
}
