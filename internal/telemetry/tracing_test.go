package telemetry

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTracingIsOffUntilAnOTLPEndpointIsSet(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	assert.False(t, TracingEnabled(getenv))
	env["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://127.0.0.1:4318"
	assert.True(t, TracingEnabled(getenv))
	env["OTEL_TRACES_EXPORTER"] = "none"
	assert.False(t, TracingEnabled(getenv))
	delete(env, "OTEL_TRACES_EXPORTER")
	env["OTEL_SDK_DISABLED"] = "true"
	assert.False(t, TracingEnabled(getenv))
}

func TestTracerProviderFromEnvExportsOverEitherOTLPProtocol(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	tp, err := TracerProviderFromEnv(context.Background())
	require.NoError(t, err)
	assert.Nil(t, tp, "no endpoint: no tracing")

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1")
	for _, protocol := range []string{"", "http/protobuf", "grpc"} {
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
		tp, err := TracerProviderFromEnv(context.Background())
		require.NoError(t, err, protocol)
		require.NotNil(t, tp, protocol)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_ = tp.Shutdown(ctx) // nothing listens there: the flush may fail, the shutdown must return
		cancel()
	}

	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")
	_, err = TracerProviderFromEnv(context.Background())
	assert.ErrorContains(t, err, "OTEL_EXPORTER_OTLP_PROTOCOL")
}
