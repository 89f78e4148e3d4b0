package telemetry

import (
	"io"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/uber-go/tally/v4"
	tallyprom "github.com/uber-go/tally/v4/prometheus"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	sdktally "go.temporal.io/sdk/contrib/tally"
	"go.temporal.io/sdk/interceptor"
)

// temporalBuckets are the SDK's latency histograms' buckets, in seconds:
// from a local RPC to a long poll.
var temporalBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// TemporalMetrics returns a handler that reports the Temporal SDK's metrics
// (workflow and activity tasks, schedule-to-start latency, poller and slot
// counts, requests to the server) into reg with Prometheus naming:
// temporal_…_total counters and temporal_…_seconds histograms. Close the
// closer when the client is closed.
func TemporalMetrics(reg prometheus.Registerer, log *slog.Logger) (client.MetricsHandler, io.Closer) {
	reporter := tallyprom.NewReporter(tallyprom.Options{
		Registerer:              reg,
		DefaultTimerType:        tallyprom.HistogramTimerType,
		DefaultHistogramBuckets: temporalBuckets,
		OnRegisterError: func(err error) {
			log.Warn("Temporal SDK metric not registered", "error", err)
		},
	})
	scope, closer := tally.NewRootScope(tally.ScopeOptions{
		CachedReporter:  reporter,
		Separator:       tallyprom.DefaultSeparator,
		SanitizeOptions: &sdktally.PrometheusSanitizeOptions,
	}, time.Second)
	return sdktally.NewMetricsHandler(sdktally.NewPrometheusNamingScope(scope)), closer
}

// TemporalTracing returns the SDK's OpenTelemetry interceptor: it continues
// the trace of whoever starts a workflow (the dispatcher, under the API
// request that took the evidence in) into the workflow and each of its
// activities, through Temporal headers.
func TemporalTracing(tp trace.TracerProvider) (interceptor.Interceptor, error) {
	return temporalotel.NewTracingInterceptor(temporalotel.TracerOptions{
		Tracer:            tp.Tracer("go.temporal.io/sdk"),
		TextMapPropagator: Propagator,
	})
}
