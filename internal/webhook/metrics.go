package webhook

import "github.com/prometheus/client_golang/prometheus"

// Metrics count webhook deliveries in the worker process that made them.
// Every method is safe on a nil *Metrics.
type Metrics struct {
	Attempts *prometheus.CounterVec // keeper_webhook_attempts_total{outcome="ok"|"error"}
	Failed   prometheus.Counter     // keeper_webhook_deliveries_failed_total
	Disabled *prometheus.CounterVec // keeper_webhooks_disabled_total{reason="failing"|"gone"}
}

// NewMetrics returns unregistered metrics.
func NewMetrics() *Metrics {
	m := &Metrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keeper_webhook_attempts_total", Help: "Webhook delivery attempts by outcome (ok: a 2xx answer)."}, []string{"outcome"}),
		Failed:   prometheus.NewCounter(prometheus.CounterOpts{Name: "keeper_webhook_deliveries_failed_total", Help: "Webhook deliveries marked failed (retries used up, or the webhook deleted or disabled)."}),
		Disabled: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "keeper_webhooks_disabled_total", Help: "Webhooks disabled, by reason: failing (for KEEPER_WEBHOOK_DISABLE_AFTER without a success) or gone (the endpoint answered 410)."}, []string{"reason"}),
	}
	m.Attempts.WithLabelValues("ok")
	m.Attempts.WithLabelValues("error")
	m.Disabled.WithLabelValues("failing")
	m.Disabled.WithLabelValues("gone")
	return m
}

// Collectors are the metrics to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Attempts, m.Failed, m.Disabled}
}

func (m *Metrics) attempt(ok bool) {
	if m == nil {
		return
	}
	outcome := "error"
	if ok {
		outcome = "ok"
	}
	m.Attempts.WithLabelValues(outcome).Inc()
}

func (m *Metrics) failed() {
	if m != nil {
		m.Failed.Inc()
	}
}

func (m *Metrics) disabled(reason string) {
	if m != nil {
		m.Disabled.WithLabelValues(reason).Inc()
	}
}
