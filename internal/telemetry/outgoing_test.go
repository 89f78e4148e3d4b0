package telemetry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/keeperhq/keeper/internal/urlpolicy"
)

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestAnOutgoingRequestIsAClientSpanUnderItsActivityWithHostAndStatusButNoToken(t *testing.T) {
	headers := make(chan http.Header, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		headers <- r.Header.Clone()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, parent := tp.Tracer("test").Start(context.Background(), "RunActivity:SendWebhook")

	client := urlpolicy.Policy{AllowPrivate: true}.Client(http.DefaultTransport.(*http.Transport).Clone())
	client.Transport = Outgoing("webhook", client.Transport)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/hooks/T0001/secret-path?token=abc", strings.NewReader(`{}`))
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	parent.End()

	var spans []sdktrace.ReadOnlySpan
	for _, s := range exp.GetSpans().Snapshots() {
		if s.SpanKind() == trace.SpanKindClient {
			spans = append(spans, s)
		}
	}
	require.Len(t, spans, 1)
	s := spans[0]
	assert.Equal(t, "webhook POST", s.Name())
	assert.Equal(t, parent.SpanContext().SpanID(), s.Parent().SpanID(), "a child of the activity's span")
	assert.Equal(t, parent.SpanContext().TraceID(), s.SpanContext().TraceID())
	a := attrs(s)
	u, _ := url.Parse(srv.URL)
	assert.Equal(t, u.Hostname(), a["server.address"].AsString())
	assert.Equal(t, int64(503), a["http.response.status_code"].AsInt64())
	assert.Equal(t, codes.Error, s.Status().Code)
	assert.Equal(t, "http://"+u.Host+"/REDACTED", a["url.full"].AsString())
	for _, kv := range s.Attributes() {
		assert.NotContains(t, kv.Value.String(), "token=abc", kv.Key)
		assert.NotContains(t, kv.Value.String(), "secret-path", kv.Key)
	}
	got := <-headers
	assert.Empty(t, got.Get("traceparent"), "no trace context goes to a third party")
}

func TestAnOutgoingRequestRefusedByTheOutboundPolicyIsAFailedClientSpan(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer srv.Close()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	ctx, parent := tp.Tracer("test").Start(context.Background(), "RunActivity:FetchUsage")

	// Wrapped over the policy's transport, the connect-time check still
	// refuses the loopback address.
	client := urlpolicy.Policy{}.Client(http.DefaultTransport.(*http.Transport).Clone())
	client.Transport = Outgoing("epoch source", client.Transport)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/usage", nil)
	require.NoError(t, err)
	_, err = client.Do(req)
	require.Error(t, err)
	assert.True(t, urlpolicy.IsRefused(err), "%v", err)
	parent.End()

	spans := exp.GetSpans().Snapshots()
	require.Len(t, spans, 2)
	assert.Equal(t, "epoch source GET", spans[0].Name())
	assert.Equal(t, codes.Error, spans[0].Status().Code)
}
