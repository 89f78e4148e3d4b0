// Package telemetry sets up what keeper reports about itself beyond its own
// records: OpenTelemetry traces exported over OTLP (configured by the
// standard OTEL_* variables, off unless an endpoint is set), and the Temporal
// SDK's metrics and tracing interceptor.
package telemetry

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// Propagator carries trace context across keeper's boundaries: incoming
// HTTP requests (W3C traceparent) and Temporal headers.
var Propagator = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})

// ServiceName is the service.name of keeper's spans unless OTEL_SERVICE_NAME
// or OTEL_RESOURCE_ATTRIBUTES names another.
const ServiceName = "keeper"

// TracingEnabled reports whether the environment asks for traces: an OTLP
// endpoint is set (OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT), and neither OTEL_SDK_DISABLED=true
// nor OTEL_TRACES_EXPORTER=none turns them off.
func TracingEnabled(getenv func(string) string) bool {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") || strings.EqualFold(getenv("OTEL_TRACES_EXPORTER"), "none") {
		return false
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// TracerProviderFromEnv returns a tracer provider that exports keeper's spans
// over OTLP as the OTEL_* variables say (endpoint, protocol grpc or
// http/protobuf, headers, TLS, sampler, batch sizes), or nil when tracing is
// off. Shut the provider down to flush the last spans.
func TracerProviderFromEnv(ctx context.Context) (*sdktrace.TracerProvider, error) {
	if !TracingEnabled(os.Getenv) {
		return nil, nil
	}
	protocol := os.Getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	protocol = cmp.Or(protocol, os.Getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	var (
		exp sdktrace.SpanExporter
		err error
	)
	switch protocol {
	case "grpc":
		exp, err = otlptracegrpc.New(ctx)
	case "", "http/protobuf":
		exp, err = otlptracehttp.New(ctx)
	default:
		return nil, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL: keeper exports traces over grpc or http/protobuf, not %q", protocol)
	}
	if err != nil {
		return nil, fmt.Errorf("OTLP trace exporter: %w", err)
	}
	res, err := resource.Merge(
		resource.NewSchemaless(attribute.String("service.name", ServiceName)),
		resource.Environment(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
	)
	if err != nil {
		return nil, fmt.Errorf("OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	// The SDK reads OTEL_TRACES_SAMPLER(_ARG) and OTEL_BSP_* itself.
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// Tracer is the tracer keeper's own spans come from: the provider of the
// span already in ctx (the API request's, or the activity's that the
// Temporal interceptor started), so that without tracing nothing is
// recorded and no global provider is needed.
func Tracer(ctx context.Context) trace.Tracer {
	return trace.SpanFromContext(ctx).TracerProvider().Tracer("github.com/keeperhq/keeper")
}
