package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/keeperhq/keeper/internal/chains/solana"
	"github.com/keeperhq/keeper/internal/dev/localnet"
	"github.com/keeperhq/keeper/internal/dev/testkit"
	"github.com/keeperhq/keeper/internal/devserver"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/worker"
)

// TestNoSecretReachesLogsOrWorkflowPayloads runs an anchoring round on both
// local chains with debug logging everywhere, tracing on, a chain failure on
// the way, and an API token, then searches every log line, every workflow
// history, every span and /metrics for the signing keys and the token.
func TestNoSecretReachesLogsOrWorkflowPayloads(t *testing.T) {
	endToEnd(t)
	var logs testkit.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	dir := tempDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{DataDir: dir, Namespace: "default", SearchAttributes: worker.SearchAttributes, Logger: log, LogLevel: slog.LevelDebug})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })

	cfg := testConfig(dir)
	cfg.Chains = []string{"etherlink", "solana"}
	cfg.Dev.EVMPort, cfg.Dev.SolanaPort = 0, 0
	cfg.Dev.EVMBlockTime, cfg.Dev.SolanaSlotTime = 100*time.Millisecond, 25*time.Millisecond
	cfg.APIToken = "tok-" + strings.Repeat("7", 40)
	net, err := localnet.StartFor(ctx, &cfg, log)
	require.NoError(t, err)
	t.Cleanup(net.Stop)
	net.Solana.FailRPC("sendTransaction", 2) // errors on the way must not leak either

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	node, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{API: true, Worker: true}, Logger: log, TracerProvider: tp,
		ClientOptions: client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()}})
	require.NoError(t, err)
	t.Cleanup(node.Kill)

	hc := &authClient{token: cfg.APIToken}
	for i := 0; i < 20; i++ {
		code, _, err := postAuth(hc, node.APIAddr(), map[string]any{"digest": digest(t.Name(), i), "chains": []string{"etherlink", "solana"}})
		require.NoError(t, err)
		require.Equal(t, 202, code)
	}
	waitConfirmed(t, node.Store, 20, 2*time.Minute)

	evmKey, err := os.ReadFile(localnet.EVMKeyFile(dir))
	require.NoError(t, err)
	solKey, err := solana.LoadKey(localnet.SolanaKeyFile(dir))
	require.NoError(t, err)
	solJSON, err := os.ReadFile(localnet.SolanaKeyFile(dir))
	require.NoError(t, err)
	secrets := map[string]string{
		"EVM key (hex)":       strings.TrimPrefix(strings.TrimSpace(string(evmKey)), "0x"),
		"Solana key (base58)": solKey.String(),
		"Solana key (JSON)":   strings.TrimSpace(string(solJSON))[:40],
		"API token":           cfg.APIToken,
	}

	histories := allHistories(t, srv)
	all := logs.String()
	require.NotEmpty(t, all)
	traces := spanText(spans.GetSpans())
	require.NotEmpty(t, traces)
	resp, err := http.Get("http://" + node.APIAddr() + "/metrics")
	require.NoError(t, err)
	metrics, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Contains(t, string(metrics), "keeper_chain_status_calls_total")
	for name, s := range secrets {
		require.Greater(t, len(s), 30, name)
		assert.NotContains(t, strings.ToLower(all), strings.ToLower(s), "%s in the logs", name)
		assert.NotContains(t, strings.ToLower(histories), strings.ToLower(s), "%s in a workflow history", name)
		assert.NotContains(t, strings.ToLower(traces), strings.ToLower(s), "%s in a span", name)
		assert.NotContains(t, strings.ToLower(string(metrics)), strings.ToLower(s), "%s in /metrics", name)
	}
	t.Logf("searched %d bytes of logs, %d bytes of workflow histories, %d bytes of spans and %d bytes of metrics", len(all), len(histories), len(traces), len(metrics))
}

func allHistories(t *testing.T, srv *devserver.Server) string {
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace(), Logger: nopLogger{}})
	require.NoError(t, err)
	defer c.Close()
	ctx := context.Background()
	res, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: srv.Namespace(), PageSize: 1000})
	require.NoError(t, err)
	require.NotEmpty(t, res.Executions)
	var b strings.Builder
	for _, e := range res.Executions {
		it := c.GetWorkflowHistory(ctx, e.Execution.WorkflowId, e.Execution.RunId, false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
		for it.HasNext() {
			ev, err := it.Next()
			require.NoError(t, err)
			j, err := protojson.Marshal(ev)
			require.NoError(t, err)
			b.Write(j)
		}
	}
	return b.String()
}

type authClient struct{ token string }

// postAuth posts one evidence with the API token.
func postAuth(c *authClient, apiAddr string, body map[string]any) (int, string, error) {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPost, "http://"+apiAddr+"/v1/evidence", bytes.NewReader(b))
	if err != nil {
		return 0, "", err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var a postAnswer
	err = json.NewDecoder(resp.Body).Decode(&a)
	return resp.StatusCode, a.ID, err
}

// spanText is every span's name, attributes, events and status, as text.
func spanText(spans tracetest.SpanStubs) string {
	var b strings.Builder
	for _, sp := range spans {
		fmt.Fprintf(&b, "%s %s %s\n", sp.Name, sp.Status.Code, sp.Status.Description)
		for _, a := range sp.Attributes {
			fmt.Fprintf(&b, "  %s=%s\n", a.Key, a.Value.String())
		}
		for _, e := range sp.Events {
			fmt.Fprintf(&b, "  event %s\n", e.Name)
			for _, a := range e.Attributes {
				fmt.Fprintf(&b, "    %s=%s\n", a.Key, a.Value.String())
			}
		}
	}
	return b.String()
}
