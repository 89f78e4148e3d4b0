package telemetry

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTemporalMetricsKeepTheirPrometheusNames: the SDK's counters, timers
// and gauges reach the registry as temporal_…_total counters,
// temporal_…_seconds histograms on temporalBuckets and plain gauges, with
// only the SDK's own labels, the names docs/production.md, the alerts and the
// dashboard use.
func TestTemporalMetricsKeepTheirPrometheusNames(t *testing.T) {
	reg := prometheus.NewRegistry()
	handler, closer := TemporalMetrics(reg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer closer.Close()
	tagged := handler.WithTags(map[string]string{"namespace": "default", "task_queue": "keeper-anchor", "operation": "PollActivityTaskQueue"})
	tagged.Counter("temporal_request").Inc(2)
	tagged.Counter("temporal_local_activity_total").Inc(1)
	tagged.Counter("temporal_sticky_cache_total_forced_eviction").Inc(1)
	tagged.Timer("temporal_activity_execution_latency").Record(300 * time.Millisecond)
	tagged.Gauge("temporal_worker_task_slots_available").Update(5)

	families, err := reg.Gather()
	require.NoError(t, err)
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	assert.ElementsMatch(t, []string{
		"temporal_request_total",
		"temporal_local_activity_total",
		"temporal_sticky_cache_total_forced_eviction_total",
		"temporal_activity_execution_latency_seconds",
		"temporal_worker_task_slots_available",
	}, names, "no target_info, no renamed metric")

	want := map[string]string{"namespace": "default", "task_queue": "keeper-anchor", "operation": "PollActivityTaskQueue"}
	labels := func(m *dto.Metric) map[string]string {
		l := map[string]string{}
		for _, p := range m.GetLabel() {
			l[p.GetName()] = p.GetValue()
		}
		return l
	}

	req := byName["temporal_request_total"]
	require.NotNil(t, req)
	assert.Equal(t, dto.MetricType_COUNTER, req.GetType())
	require.Len(t, req.GetMetric(), 1)
	assert.Equal(t, 2.0, req.GetMetric()[0].GetCounter().GetValue())
	assert.Equal(t, want, labels(req.GetMetric()[0]), "only the SDK's labels, no otel_scope_*")

	lat := byName["temporal_activity_execution_latency_seconds"]
	require.NotNil(t, lat)
	assert.Equal(t, dto.MetricType_HISTOGRAM, lat.GetType())
	h := lat.GetMetric()[0].GetHistogram()
	assert.Equal(t, uint64(1), h.GetSampleCount())
	assert.InDelta(t, 0.3, h.GetSampleSum(), 1e-9)
	var bounds []float64
	for _, b := range h.GetBucket() {
		bounds = append(bounds, b.GetUpperBound())
	}
	assert.Equal(t, temporalBuckets, bounds)
	assert.Equal(t, want, labels(lat.GetMetric()[0]))

	slots := byName["temporal_worker_task_slots_available"]
	require.NotNil(t, slots)
	assert.Equal(t, dto.MetricType_GAUGE, slots.GetType())
	assert.Equal(t, 5.0, slots.GetMetric()[0].GetGauge().GetValue())
}
