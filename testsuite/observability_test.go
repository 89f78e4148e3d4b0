package testsuite

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/dev/testkit"
	"github.com/keeperhq/keeper/internal/node"
)

// TestAnAnchoringRoundShowsInMetricsTracesAndLogs anchors one evidence on a
// node with tracing into memory and JSON logs into a buffer, then checks
// what an operator would look at: the /metrics series, one trace from the
// API request down to the chain calls, and log lines that name their
// workflow, run, batch and chain.
func TestAnAnchoringRoundShowsInMetricsTracesAndLogs(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	cfg.MetricsAddr = "127.0.0.1:0"
	_, ch := stubChains(cfg)
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	var logs testkit.SyncBuffer
	node, err := node.Start(context.Background(), node.Options{
		Config: cfg, Roles: node.Roles{API: true, Worker: true}, Chains: ch, TracerProvider: tp,
		Logger:        cli.NewLogger(&logs, "info", "json"),
		ClientOptions: client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()},
	})
	require.NoError(t, err)
	t.Cleanup(node.Kill)

	code, id, err := post(http.DefaultClient, node.APIAddr(), map[string]any{"digest": digest(t.Name(), 0), "chains": []string{"stub"}})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code)
	waitConfirmed(t, node.Store, 1, time.Minute)

	t.Run("metrics", func(t *testing.T) {
		// RecordReceipts counts the batch just after the store says confirmed.
		var m metricFamilies
		require.Eventually(t, func() bool {
			m = scrape(t, "http://"+node.APIAddr()+"/metrics")
			return m.value("keeper_anchor_batches_total", "chain", "stub", "outcome", "confirmed") == 1
		}, 10*time.Second, 50*time.Millisecond)

		assert.Equal(t, 1.0, m.value("keeper_intake_requests_total", "code", "202"))
		for _, status := range []string{"pending", "batched", "submitted"} {
			assert.Equal(t, 0.0, m.value("keeper_anchor_queue_depth", "chain", "stub", "status", status), status)
		}
		assert.Equal(t, 0.0, m.value("keeper_anchor_oldest_pending_age_seconds", "chain", "stub"))
		assert.Equal(t, 0.0, m.value("keeper_anchor_batches_total", "chain", "stub", "outcome", "dead_letter"))
		assert.GreaterOrEqual(t, m.value("keeper_anchor_transactions_total", "chain", "stub", "outcome", "submitted"), 1.0)
		assert.Equal(t, 1.0, m.value("keeper_anchor_transactions_total", "chain", "stub", "outcome", "final"))
		assert.Equal(t, 0.0, m.value("keeper_dead_letters_total", "chain", "stub"))
		size := m.histogram("keeper_anchor_batch_size", "chain", "stub")
		assert.Equal(t, uint64(1), size.GetSampleCount())
		assert.Equal(t, 1.0, size.GetSampleSum(), "one evidence in the batch")
		final := m.histogram("keeper_anchor_submit_to_final_seconds", "chain", "stub")
		assert.Equal(t, uint64(1), final.GetSampleCount())
		assert.InDelta(t, 1.5, final.GetSampleSum(), 1.4, "the stub chain is final %v after broadcast", cfg.StubConfirmDelay)
		assert.Equal(t, 0.0, m.value("keeper_busy_rejections_total", "endpoint", "evidence"))
		assert.Equal(t, 0.0, m.value("keeper_busy_rejections_total", "endpoint", "compute"))
		assert.Equal(t, 0.0, m.value("keeper_epochs", "status", "computing"))
		assert.Equal(t, 0.0, m.value("keeper_queue_depth", "queue", "epochs"))

		// The Temporal SDK's own metrics, with Prometheus naming (its
		// counters reach the registry every second).
		require.Eventually(t, func() bool {
			m = scrape(t, "http://"+node.APIAddr()+"/metrics")
			return m.sum("temporal_workflow_completed_total", "workflow_type", "AnchorBatch") >= 1
		}, 10*time.Second, 100*time.Millisecond, "temporal metrics: %v", m.names("temporal_"))
		assert.GreaterOrEqual(t, m.histogramCount("temporal_local_activity_execution_latency_seconds", "activity_type", "SubmitAnchor"), uint64(1))
		assert.Greater(t, m.sum("temporal_request_total"), 0.0)
		assert.Contains(t, m, "go_goroutines")

		// KEEPER_METRICS_ADDR serves the same registry.
		other := scrape(t, "http://"+node.MetricsAddr()+"/metrics")
		assert.Equal(t, 1.0, other.value("keeper_anchor_batches_total", "chain", "stub", "outcome", "confirmed"))
	})

	t.Run("trace", func(t *testing.T) {
		want := []string{"dispatch batch", "StartWorkflow:AnchorBatch", "RunWorkflow:AnchorBatch",
			"RunActivity:SubmitAnchor", "stub submit", "RunActivity:ConfirmAnchor", "stub status", "RunActivity:RecordReceipts"}
		byName := map[string]tracetest.SpanStub{}
		require.Eventually(t, func() bool {
			byName = map[string]tracetest.SpanStub{}
			for _, s := range spans.GetSpans() {
				if _, seen := byName[s.Name]; !seen {
					byName[s.Name] = s
				}
			}
			for _, name := range append(want, "POST /v1/evidence") {
				if _, ok := byName[name]; !ok {
					return false
				}
			}
			return true
		}, 10*time.Second, 50*time.Millisecond, "spans seen: %v", names(spans.GetSpans()))
		req := byName["POST /v1/evidence"]
		traceID := req.SpanContext.TraceID()
		for _, name := range want {
			assert.Equal(t, traceID, byName[name].SpanContext.TraceID(), "%s is in the API request's trace", name)
		}
		assert.Equal(t, req.SpanContext.SpanID(), byName["dispatch batch"].Parent.SpanID(), "the batch's start continues the request")
		assert.Equal(t, byName["RunActivity:SubmitAnchor"].SpanContext.SpanID(), byName["stub submit"].Parent.SpanID(), "the chain call is under its activity")
		assert.Contains(t, attrs(byName["POST /v1/evidence"]), "keeper.evidence_id="+id)
		assert.Contains(t, attrs(byName["stub submit"]), "keeper.chain=stub")
	})

	t.Run("logs", func(t *testing.T) {
		var anchored int
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var line map[string]any
			require.NoError(t, json.Unmarshal(sc.Bytes(), &line), "every line is JSON: %s", sc.Text())
			if _, ok := line["batch_id"]; !ok {
				continue
			}
			anchored++
			assert.Equal(t, "stub", line["chain"], "%s", sc.Text())
			assert.Regexp(t, `^anchor-stub-\d+$`, line["workflow_id"], "%s", sc.Text())
			assert.NotEmpty(t, line["run_id"], "%s", sc.Text())
		}
		require.NoError(t, sc.Err())
		assert.GreaterOrEqual(t, anchored, 3, "submitted, final and receipts recorded are logged:\n%s", logs.String())
		assert.Contains(t, logs.String(), `"msg":"anchor final"`)
	})
}

type metricFamilies map[string]*dto.MetricFamily

func scrape(t *testing.T, url string) metricFamilies {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return m
}

// series returns the metrics of family name whose labels include the given
// name/value pairs.
func (m metricFamilies) series(name string, labels ...string) []*dto.Metric {
	var out []*dto.Metric
	f := m[name]
	if f == nil {
		return nil
	}
next:
	for _, s := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range s.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for i := 0; i+1 < len(labels); i += 2 {
			if have[labels[i]] != labels[i+1] {
				continue next
			}
		}
		out = append(out, s)
	}
	return out
}

// value is the one series' value, or -1 when there is no such series.
func (m metricFamilies) value(name string, labels ...string) float64 {
	s := m.series(name, labels...)
	if len(s) != 1 {
		return -1
	}
	switch {
	case s[0].Counter != nil:
		return s[0].Counter.GetValue()
	case s[0].Gauge != nil:
		return s[0].Gauge.GetValue()
	case s[0].Untyped != nil:
		return s[0].Untyped.GetValue()
	}
	return -1
}

func (m metricFamilies) sum(name string, labels ...string) float64 {
	var total float64
	for _, s := range m.series(name, labels...) {
		total += s.GetCounter().GetValue()
	}
	return total
}

func (m metricFamilies) histogram(name string, labels ...string) *dto.Histogram {
	s := m.series(name, labels...)
	if len(s) != 1 {
		return nil
	}
	return s[0].GetHistogram()
}

func (m metricFamilies) histogramCount(name string, labels ...string) uint64 {
	var n uint64
	for _, s := range m.series(name, labels...) {
		n += s.GetHistogram().GetSampleCount()
	}
	return n
}

func (m metricFamilies) names(prefix string) []string {
	var out []string
	for name := range m {
		if strings.HasPrefix(name, prefix) {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

func names(spans tracetest.SpanStubs) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}

func attrs(s tracetest.SpanStub) []string {
	var out []string
	for _, a := range s.Attributes {
		out = append(out, fmt.Sprintf("%s=%s", a.Key, a.Value.String()))
	}
	return out
}
