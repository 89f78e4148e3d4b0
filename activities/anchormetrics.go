package activities

import (
	"github.com/prometheus/client_golang/prometheus"
)

// AnchorMetrics count the anchoring activities' attempts by chain and
// activity, so retries show on /metrics while Temporal runs them (the
// workflow history shows each activity's last attempt only when it ends).
type AnchorMetrics struct {
	Attempts *prometheus.CounterVec // keeper_anchor_attempts_total{chain,activity}
	Retries  *prometheus.CounterVec // keeper_anchor_retries_total{chain,activity}
	Dropped  *prometheus.CounterVec // keeper_anchor_dropped_total{chain}
}

// NewAnchorMetrics returns unregistered counters; register Collectors()
// where /metrics is served.
func NewAnchorMetrics() *AnchorMetrics {
	return &AnchorMetrics{
		Attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_anchor_attempts_total", Help: "Attempts of the anchoring activities (SubmitAnchor, ConfirmAnchor, RecordReceipts), first ones and retries, by chain and activity.",
		}, []string{"chain", "activity"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_anchor_retries_total", Help: "Attempts of the anchoring activities that retry a failed or timed-out attempt (Temporal attempt > 1), by chain and activity.",
		}, []string{"chain", "activity"}),
		Dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_anchor_dropped_total", Help: "Anchor transactions the chain will not include as sent (evicted, reorganised out, blockhash expired), each followed by a new SubmitAnchor, by chain.",
		}, []string{"chain"}),
	}
}

// Collectors are the counters to register.
func (m *AnchorMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Attempts, m.Retries, m.Dropped}
}

// attempt counts one activity attempt; m may be nil.
func (m *AnchorMetrics) attempt(chain, activity string, attempt int32) {
	if m == nil {
		return
	}
	m.Attempts.WithLabelValues(chain, activity).Inc()
	if attempt > 1 {
		m.Retries.WithLabelValues(chain, activity).Inc()
	}
}

// dropped counts one dropped transaction; m may be nil.
func (m *AnchorMetrics) dropped(chain string) {
	if m == nil {
		return
	}
	m.Dropped.WithLabelValues(chain).Inc()
}
