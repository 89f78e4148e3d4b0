package starter

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/store"
)

// metrics are the API's own metrics: what it answered, and gauges read from
// the store at scrape time (so every API node reports the same numbers).
type metrics struct {
	registry       *prometheus.Registry
	intakeRequests *prometheus.CounterVec
	intakeLatency  prometheus.Histogram
	batchLatency   prometheus.Histogram
	busy           *prometheus.CounterVec
	readyDegraded  *prometheus.GaugeVec
	rejected       *prometheus.CounterVec
	redriven       *prometheus.CounterVec
}

// Counts is the store as the API's gauges need it, read at scrape time.
type Counts interface {
	PendingCount(ctx context.Context) (int, error)
	PendingChains(ctx context.Context) (map[string]store.PendingInfo, error)
	UnfinishedBatches(ctx context.Context) ([]store.BatchCount, error)
	ProgressOf(ctx context.Context, chains []string, pending map[string]store.PendingInfo) (map[string]store.ChainProgress, error)
}

// newMetrics registers the API's metrics in reg; a nil reg gets a registry
// of its own with the Go and process collectors.
func newMetrics(reg *prometheus.Registry, st Counts, chainNames []string) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &metrics{
		registry: reg,
		intakeRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_intake_requests_total", Help: "Evidence intake answers by HTTP status: one per POST /v1/evidence, one per item of POST /v1/evidence/batch (a batch refused whole counts once).",
		}, []string{"code"}),
		intakeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "keeper_intake_duration_seconds", Help: "Time to answer POST /v1/evidence.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
		batchLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "keeper_intake_batch_duration_seconds", Help: "Time to answer POST /v1/evidence/batch (up to 1,000 evidence).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		busy: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_busy_rejections_total",
			Help: "Requests refused because too much work is in flight, by endpoint: compute (429, epochs in flight), evidence (429, pending evidence for priority 6–10), and the route groups v1, rewarder, ledger, metrics, readyz (503, concurrent requests).",
		}, []string{"endpoint"}),
	}
	for _, e := range []string{"compute", "evidence", "v1", "rewarder", "ledger"} { // shown at 0 before the first refusal
		m.busy.WithLabelValues(e)
	}
	m.readyDegraded = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "keeper_readyz_degraded",
		Help: "1 while a readiness check fails, by cause (store, temporal, chain:<name>, draining), as of this node's last /readyz answer; 0 once it passes again.",
	}, []string{"cause"})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "keeper_intake_rejected_total",
		Help: "Evidence intake refused for now (429 or 503 with Retry-After: nothing stored, send it again later), by reason, the answer's code: overloaded (priority 6–10 at KEEPER_MAX_PENDING), backlog_full (priority 1–5 at KEEPER_MAX_BACKLOG after KEEPER_INTAKE_WAIT), store_unavailable, draining. One per POST /v1/evidence, one per item of POST /v1/evidence/batch (a batch refused whole counts once).",
	}, []string{"reason"})
	for _, r := range []string{"overloaded", "backlog_full", "store_unavailable", "draining"} {
		m.rejected.WithLabelValues(r)
	}
	m.redriven = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "keeper_evidence_redriven_total",
		Help: "Dead-lettered anchors put back to be anchored again, one per evidence and chain, by chain: POST /v1/dead-letters/redrive (keeper redrive) and POST /v1/evidence/{id}/retry.",
	}, []string{"chain"})
	for _, c := range chainNames {
		m.redriven.WithLabelValues(c)
	}
	pending := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "keeper_evidence_pending", Help: "Evidence stored but not yet in a batch.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := st.PendingCount(ctx)
		if err != nil {
			return -1
		}
		return float64(n)
	})
	reg.MustRegister(m.intakeRequests, m.intakeLatency, m.batchLatency, m.busy, m.readyDegraded, m.rejected, m.redriven, pending, storeCollector{st: st, chains: chainNames})
	return m
}

func (m *metrics) intake(code int, d time.Duration) {
	m.intakeRequests.WithLabelValues(strconv.Itoa(code)).Inc()
	m.intakeLatency.Observe(d.Seconds())
	if code == 429 {
		m.busy.WithLabelValues("evidence").Inc()
	}
}

// CountBusy counts a request a feature refused because too much of its
// work is in flight, under endpoint (keeper_busy_rejections_total): compute's
// 429 for the epochs in flight. Call it once Handler has built the API.
func (a *API) CountBusy(endpoint string) { a.metrics.busy.WithLabelValues(endpoint).Inc() }

// refused counts an intake answer refused for now (429 or 503) under its
// code.
func (m *metrics) refused(e *httpapi.Error) {
	if e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable {
		m.rejected.WithLabelValues(e.Code).Inc()
	}
}

// intakeBatch counts a batch's answers as intake counts single ones: each
// item under its status (a 429 as a refusal too), and the batch's time.
func (m *metrics) intakeBatch(answered map[int]int, d time.Duration) {
	for code, n := range answered {
		m.intakeRequests.WithLabelValues(strconv.Itoa(code)).Add(float64(n))
		if code == 429 {
			m.busy.WithLabelValues("evidence").Add(float64(n))
		}
	}
	m.batchLatency.Observe(d.Seconds())
}

var (
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

// storeCollector reads the anchoring queue from the store at scrape time.
type storeCollector struct {
	st     Counts
	chains []string // configured chains: their series show 0 rather than nothing
}

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{anchorQueueDesc, oldestPendingDesc, oldestUnconfirmedDesc, lastSuccessDesc} {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c.collectAnchoring(ctx, ch)
}

func (c storeCollector) collectAnchoring(ctx context.Context, ch chan<- prometheus.Metric) {
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
func (c storeCollector) collectProgress(ctx context.Context, ch chan<- prometheus.Metric, now time.Time, pending map[string]store.PendingInfo) {
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

// degraded sets keeper_readyz_degraded for one readiness cause.
func (m *metrics) degraded(cause string, failing bool) {
	v := 0.0
	if failing {
		v = 1
	}
	m.readyDegraded.WithLabelValues(cause).Set(v)
}
