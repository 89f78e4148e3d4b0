package epoch

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keeperhq/keeper/internal/retry"
)

// UpstreamMetrics count what upstream calls ran into, by operation
// ("source", "ledger").
type UpstreamMetrics struct {
	Timeouts *prometheus.CounterVec // keeper_io_timeouts_total{op}
	Retries  *prometheus.CounterVec // keeper_backoff_retries_total{op}
}

// NewUpstreamMetrics returns unregistered counters; register Collectors()
// where /metrics is served.
func NewUpstreamMetrics() *UpstreamMetrics {
	m := &UpstreamMetrics{
		Timeouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_io_timeouts_total", Help: "Upstream calls (accounting source, ledger) that timed out, by operation.",
		}, []string{"op"}),
		Retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "keeper_backoff_retries_total", Help: "Upstream calls attempted again after a jittered 100–250 ms pause, by operation.",
		}, []string{"op"}),
	}
	for _, op := range []string{"source", "ledger"} { // shown at 0 before the first one
		m.Timeouts.WithLabelValues(op)
		m.Retries.WithLabelValues(op)
	}
	return m
}

// Collectors are the counters to register.
func (m *UpstreamMetrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.Timeouts, m.Retries}
}

// callIdempotent runs call, an idempotent upstream call, under the short
// read retry (docs/retries.md, upstream): at most 3 attempts, 100–250 ms
// apart; what still fails goes to the activity's retry policy. Each attempt
// is cancelled once it makes no progress for timeout: call reports progress
// (body bytes read) through the function it is given, so a large answer that
// keeps arriving is not cut off. A timeout is always worth another attempt;
// retryable says whether another error is. Timeouts and retries are counted
// in m under op.
func callIdempotent(ctx context.Context, m *UpstreamMetrics, op string, timeout time.Duration, retryable func(error) bool, call func(ctx context.Context, progress func()) error) error {
	return retry.Reads{
		Stall: timeout,
		Check: func(err error, stalled bool) (error, bool) {
			var ne net.Error
			if !stalled && !(errors.As(err, &ne) && ne.Timeout()) {
				return err, retryable(err)
			}
			if m != nil {
				m.Timeouts.WithLabelValues(op).Inc()
			}
			return fmt.Errorf("%s: no answer within %v: %w", op, timeout, err), true
		},
		Retrying: func(error) {
			if m != nil {
				m.Retries.WithLabelValues(op).Inc()
			}
		},
	}.Do(ctx, call)
}
