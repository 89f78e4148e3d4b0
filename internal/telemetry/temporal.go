package telemetry

import (
	"context"
	"io"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/trace"
	"go.temporal.io/sdk/client"
	temporalotel "go.temporal.io/sdk/contrib/opentelemetry"
	"go.temporal.io/sdk/interceptor"
)

// temporalBuckets are the SDK's latency histograms' buckets, in seconds:
// from a local RPC to a long poll.
var temporalBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// TemporalMetrics returns a handler that reports the Temporal SDK's metrics
// (workflow and activity tasks, schedule-to-start latency, poller and slot
// counts, requests to the server) into reg with Prometheus naming:
// temporal_…_total counters and temporal_…_seconds histograms. They go
// through an OpenTelemetry meter whose Prometheus exporter is read at each
// scrape. Close the closer when the client is closed. If the exporter cannot
// be registered, the SDK's metrics are off and a warning says why.
func TemporalMetrics(reg prometheus.Registerer, log *slog.Logger) (client.MetricsHandler, io.Closer) {
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(reg),
		// promNames adds the suffixes: the exporter's own would drop a
		// "total" inside a name (temporal_sticky_cache_total_forced_eviction).
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithoutSuffixes),
		// Only the SDK's own labels (namespace, task_queue, workflow_type, …),
		// as before: no otel_scope_* labels and no target_info series.
		otelprom.WithoutScopeInfo(),
		otelprom.WithoutTargetInfo(),
	)
	if err != nil {
		log.Warn("Temporal SDK metrics not exported", "error", err)
		return client.MetricsNopHandler, io.NopCloser(nil)
	}
	provider := sdkmetric.NewMeterProvider(
		sdkmetric.WithReader(exporter),
		sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Kind: sdkmetric.InstrumentKindHistogram},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationExplicitBucketHistogram{Boundaries: temporalBuckets}},
		)),
	)
	handler := temporalotel.NewMetricsHandler(temporalotel.MetricsHandlerOptions{
		Meter: provider.Meter("go.temporal.io/sdk"),
		// Counters are monotonic: Prometheus counters, not gauges.
		UseMonotonicCounters: true,
		OnError: func(err error) {
			log.Warn("Temporal SDK metric not registered", "error", err)
		},
	})
	return promNames{handler}, meterCloser{provider}
}

// promNames gives the SDK's metrics Prometheus names, as its tally
// contrib did: counters end in _total, timers (in seconds) in _seconds.
type promNames struct{ client.MetricsHandler }

func (p promNames) WithTags(tags map[string]string) client.MetricsHandler {
	return promNames{p.MetricsHandler.WithTags(tags)}
}

func (p promNames) Counter(name string) client.MetricsCounter {
	if !strings.HasSuffix(name, "_total") {
		name += "_total"
	}
	return p.MetricsHandler.Counter(name)
}

func (p promNames) Timer(name string) client.MetricsTimer {
	if !strings.HasSuffix(name, "_seconds") {
		name += "_seconds"
	}
	return p.MetricsHandler.Timer(name)
}

// meterCloser shuts the meter provider down; the exporter stays registered
// and reports no more series.
type meterCloser struct{ provider *sdkmetric.MeterProvider }

func (c meterCloser) Close() error { return c.provider.Shutdown(context.Background()) }

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
