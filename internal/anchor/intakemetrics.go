package anchor

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keeperhq/keeper/internal/httpapi"
)

// IntakeMetrics count what the evidence routes answered, in the API process
// that answered. Every method is safe on a nil *IntakeMetrics (counts
// nothing). Register Collectors() where /metrics is served.
type IntakeMetrics struct {
	Requests     *prometheus.CounterVec // keeper_intake_requests_total{code}
	Latency      prometheus.Histogram   // keeper_intake_duration_seconds
	BatchLatency prometheus.Histogram   // keeper_intake_batch_duration_seconds
	Rejected     *prometheus.CounterVec // keeper_intake_rejected_total{reason}
	Redriven     *prometheus.CounterVec // keeper_evidence_redriven_total{chain}
}

// NewIntakeMetrics returns unregistered metrics; the re-drive series of the
// given chains start at 0.
func NewIntakeMetrics(chainNames ...string) *IntakeMetrics {
	m := &IntakeMetrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_intake_requests_total", Help: "Evidence intake answers by HTTP status: one per POST /v1/evidence, one per item of POST /v1/evidence/batch (a batch refused whole counts once).",
		}, []string{"code"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "keeper_intake_duration_seconds", Help: "Time to answer POST /v1/evidence.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
		BatchLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "keeper_intake_batch_duration_seconds", Help: "Time to answer POST /v1/evidence/batch (up to 1,000 evidence).",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		Rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_intake_rejected_total",
			Help: "Evidence intake refused for now (429 or 503 with Retry-After: nothing stored, send it again later), by reason, the answer's code: overloaded (priority 6–10 at KEEPER_MAX_PENDING), backlog_full (priority 1–5 at KEEPER_MAX_BACKLOG after KEEPER_INTAKE_WAIT), store_unavailable, draining. One per POST /v1/evidence, one per item of POST /v1/evidence/batch (a batch refused whole counts once).",
		}, []string{"reason"}),
		Redriven: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_evidence_redriven_total",
			Help: "Dead-lettered anchors put back to be anchored again, one per evidence and chain, by chain: POST /v1/dead-letters/redrive (keeper redrive) and POST /v1/evidence/{id}/retry.",
		}, []string{"chain"}),
	}
	for _, r := range []string{"overloaded", "backlog_full", "store_unavailable", "draining"} {
		m.Rejected.WithLabelValues(r)
	}
	for _, c := range chainNames {
		m.Redriven.WithLabelValues(c)
	}
	return m
}

// Collectors are the metrics to register.
func (m *IntakeMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Requests, m.Latency, m.BatchLatency, m.Rejected, m.Redriven}
}

// intake counts one POST /v1/evidence answer and its time.
func (m *IntakeMetrics) intake(code int, d time.Duration) {
	if m == nil {
		return
	}
	m.Requests.WithLabelValues(strconv.Itoa(code)).Inc()
	m.Latency.Observe(d.Seconds())
}

// refused counts an intake answer refused for now (429 or 503) under its
// code.
func (m *IntakeMetrics) refused(e *httpapi.Error) {
	if m != nil && (e.Status == http.StatusTooManyRequests || e.Status == http.StatusServiceUnavailable) {
		m.Rejected.WithLabelValues(e.Code).Inc()
	}
}

// intakeBatch counts a batch's answers as intake counts single ones: each
// item under its status, and the batch's time.
func (m *IntakeMetrics) intakeBatch(answered map[int]int, d time.Duration) {
	if m == nil {
		return
	}
	for code, n := range answered {
		m.Requests.WithLabelValues(strconv.Itoa(code)).Add(float64(n))
	}
	m.BatchLatency.Observe(d.Seconds())
}

// redrove counts n dead-lettered anchors of chain put back.
func (m *IntakeMetrics) redrove(chain string, n int) {
	if m != nil {
		m.Redriven.WithLabelValues(chain).Add(float64(n))
	}
}
