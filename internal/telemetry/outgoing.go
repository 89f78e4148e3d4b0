package telemetry

import (
	"net/http"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Outgoing wraps rt, the transport of requests keeper makes to URLs callers
// handed it (webhook endpoints, epoch sources), so that each request is an
// OpenTelemetry client span named "<name> <METHOD>" under the span in its
// context: the activity's, which the Temporal interceptor continues from
// whoever started the workflow. A slow or failing receiver then shows in
// the trace with its host and answer status. The span's url.full keeps
// only the scheme and host, since the path or query of a caller's URL may
// carry a token. No trace context is sent: the target is a third party,
// not part of keeper's trace. rt stays the transport that connects (for
// these URLs the outbound policy's, which checks every connection). Without
// a traced context nothing is recorded.
func Outgoing(name string, rt http.RoundTripper) http.RoundTripper {
	return otelhttp.NewTransport(redactURL{rt},
		otelhttp.WithPropagators(propagation.NewCompositeTextMapPropagator()),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return name + " " + r.Method }),
	)
}

// redactURL replaces the url.full otelhttp set on the request's span with
// the URL's scheme and host.
type redactURL struct{ next http.RoundTripper }

func (r redactURL) RoundTrip(req *http.Request) (*http.Response, error) {
	if span := trace.SpanFromContext(req.Context()); span.IsRecording() && req.URL != nil {
		u := req.URL.Scheme + "://" + req.URL.Host
		if req.URL.Path != "" && req.URL.Path != "/" || req.URL.RawQuery != "" {
			u += "/REDACTED"
		}
		span.SetAttributes(attribute.String("url.full", u))
	}
	return r.next.RoundTrip(req)
}
