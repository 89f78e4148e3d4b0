package activities

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Seed 001's rule for upstream calls (accounting source, ledger): only
// idempotent calls are retried, at most 3 attempts, with a uniform 100–250 ms
// pause between them; what still fails goes to the activity's retry policy.
const (
	upstreamAttempts = 3
	upstreamPauseMin = 100 * time.Millisecond
	upstreamPauseMax = 250 * time.Millisecond
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

// errStalled is the cause when an upstream call made no progress (no answer,
// or no body bytes) for a whole call timeout.
var errStalled = errors.New("upstream made no progress within the call timeout")

// callIdempotent runs call, an idempotent upstream call, up to 3 times. Each
// attempt is cancelled once it makes no progress for timeout: call reports
// progress (body bytes read) through the function it is given, so a large
// answer that keeps arriving is not cut off. retryable says whether an error
// other than a timeout is worth another attempt.
func callIdempotent(ctx context.Context, m *UpstreamMetrics, op string, timeout time.Duration, retryable func(error) bool, call func(ctx context.Context, progress func()) error) error {
	for attempt := 1; ; attempt++ {
		cctx, cancel := context.WithCancelCause(ctx)
		watchdog := time.AfterFunc(timeout, func() { cancel(errStalled) })
		err := call(cctx, func() { watchdog.Reset(timeout) })
		watchdog.Stop()
		var ne net.Error
		timedOut := err != nil && (errors.Is(context.Cause(cctx), errStalled) || errors.As(err, &ne) && ne.Timeout())
		cancel(nil)
		if err == nil {
			return nil
		}
		if timedOut {
			err = fmt.Errorf("%s: no answer within %v: %w", op, timeout, err)
			if m != nil {
				m.Timeouts.WithLabelValues(op).Inc()
			}
		}
		if ctx.Err() != nil || attempt == upstreamAttempts || !(timedOut || retryable(err)) {
			return err
		}
		if m != nil {
			m.Retries.WithLabelValues(op).Inc()
		}
		pause := upstreamPauseMin + rand.N(upstreamPauseMax-upstreamPauseMin+1)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
