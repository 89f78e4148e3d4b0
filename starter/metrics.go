package starter

import (
	"context"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/keeperhq/keeper/store"
)

type metrics struct {
	registry       *prometheus.Registry
	intakeRequests *prometheus.CounterVec
	intakeLatency  prometheus.Histogram
}

func newMetrics(st *store.Store) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		intakeRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_intake_requests_total", Help: "POST /v1/evidence answers by HTTP status.",
		}, []string{"code"}),
		intakeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "keeper_intake_duration_seconds", Help: "Time to answer POST /v1/evidence.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, 1},
		}),
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
	m.registry.MustRegister(m.intakeRequests, m.intakeLatency, pending,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) intake(code int, d time.Duration) {
	m.intakeRequests.WithLabelValues(strconv.Itoa(code)).Inc()
	m.intakeLatency.Observe(d.Seconds())
}
