package starter

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// metrics are the API's own metrics, over every feature: requests refused
// for too much work in flight, and readiness. A feature's metrics are its
// own, registered by the node in the same registry.
type metrics struct {
	registry      *prometheus.Registry
	busy          *prometheus.CounterVec
	readyDegraded *prometheus.GaugeVec
}

// newMetrics registers the API's metrics in reg; a nil reg gets a registry
// of its own with the Go and process collectors.
func newMetrics(reg *prometheus.Registry) *metrics {
	if reg == nil {
		reg = prometheus.NewRegistry()
		reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	m := &metrics{
		registry: reg,
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
	reg.MustRegister(m.busy, m.readyDegraded)
	return m
}

// CountBusy counts a request a feature refused because too much of its
// work is in flight, under endpoint (keeper_busy_rejections_total): compute's
// 429 for the epochs in flight, evidence's for the pending queue. Call it
// once Handler has built the API.
func (a *API) CountBusy(endpoint string) { a.metrics.busy.WithLabelValues(endpoint).Inc() }

// degraded sets keeper_readyz_degraded for one readiness cause.
func (m *metrics) degraded(cause string, failing bool) {
	v := 0.0
	if failing {
		v = 1
	}
	m.readyDegraded.WithLabelValues(cause).Set(v)
}
