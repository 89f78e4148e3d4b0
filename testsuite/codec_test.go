package testsuite

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/api/enums/v1"
	historypb "go.temporal.io/api/history/v1"
	"go.temporal.io/api/proxy"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"

	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/dev/testkit"
	"github.com/keeperhq/keeper/internal/devserver"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/worker"
	"github.com/keeperhq/keeper/internal/workflows"
)

// TestWithACodecKeyFileTemporalHoldsOnlyCiphertextAndKeeperWorksAsBefore
// runs an evidence through keeper dev's wiring with KEEPER_CODEC_KEY_FILE
// and a failed finality lookup on the way (ConfirmAnchor's retry records the
// failure in the history; submit's quick local retries record none), then
// reads the histories as anyone with access to Temporal's database or UI
// would, without the key.
func TestWithACodecKeyFileTemporalHoldsOnlyCiphertextAndKeeperWorksAsBefore(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	cfg := testConfig(dir)
	cfg.HTTPAddr = "127.0.0.1:" + strconv.Itoa(freePort(t))
	cfg.CodecKeyFile = writeCodecKeys(t, "2026-06", "2025-01")

	var logs testkit.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := devserver.Start(ctx, devserver.Options{
		DataDir: dir, UIPort: freePort(t), Namespace: "default", SearchAttributes: worker.SearchAttributes, Logger: log,
		CodecEndpoint: cli.DevCodecEndpoint(cfg),
	})
	require.NoError(t, err)
	t.Cleanup(func() { srv.Stop() })
	cli.AllowDevUI(&cfg, srv.UIAddr(), log)

	chain, ch := stubChains(cfg)
	chain.FailStatus(1)
	st := openStore(t, dir)
	node, err := node.Start(ctx, node.Options{Config: cfg, Roles: node.Roles{API: true, Worker: true}, Store: st, Chains: ch, Logger: log,
		ClientOptions: client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace()}})
	require.NoError(t, err)
	t.Cleanup(node.Kill)

	dg := digest(t.Name(), 0)
	const secretMeta = "acme-confidential-7781"
	code, id, err := post(http.DefaultClient, node.APIAddr(), map[string]any{"digest": dg, "chains": []string{"stub"}, "metadata": map[string]any{"customer": secretMeta}})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code)
	waitConfirmed(t, st, 1, time.Minute)
	anchor := receiptFor(t, node.APIAddr(), id).Anchors[0]
	txHash := strings.TrimPrefix(anchor.TxRef, "stub:")

	raw, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace(), Logger: nopLogger{}})
	require.NoError(t, err)
	defer raw.Close()
	res, err := raw.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: srv.Namespace(), Query: "WorkflowType = 'AnchorBatch'"})
	require.NoError(t, err)
	require.Len(t, res.Executions, 1)
	wfID := res.Executions[0].Execution.WorkflowId
	history := &historypb.History{}
	it := raw.GetWorkflowHistory(ctx, wfID, "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		ev, err := it.Next()
		require.NoError(t, err)
		history.Events = append(history.Events, ev)
	}

	t.Run("the stored history holds no plaintext", func(t *testing.T) {
		b, err := proto.Marshal(history)
		require.NoError(t, err)
		for name, s := range map[string]string{
			"digest": dg, "metadata": secretMeta, "Merkle root": anchor.Root, "transaction hash": txHash,
			"input field": "BatchID", "result field": "TxRef", "error message": "injected transient failure",
		} {
			assert.NotContains(t, string(b), s, "%s in the raw history", name)
		}
		var n int
		require.NoError(t, visitPayloads(ctx, history, func(p *commonpb.Payload) (*commonpb.Payload, error) {
			n++
			assert.Equal(t, "binary/encrypted", string(p.Metadata["encoding"]))
			assert.Equal(t, "2026-06", string(p.Metadata["encryption-key-id"]), "the first key encrypts")
			return p, nil
		}))
		assert.Greater(t, n, 5, "input, activity inputs and results, failure, workflow result")
	})

	t.Run("a client without the key cannot read the result, keeper's client can", func(t *testing.T) {
		var out workflows.AnchorBatchResult
		err := raw.GetWorkflow(ctx, wfID, "").Get(ctx, &out)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "binary/encrypted")

		require.NoError(t, node.Client.GetWorkflow(ctx, wfID, "").Get(ctx, &out))
		assert.Equal(t, "confirmed", out.Status)
		assert.Equal(t, anchor.TxRef, out.TxRef)
	})

	t.Run("the API's /codec decodes the history as the Web UI asks it to", func(t *testing.T) {
		endpoint := cli.DevCodecEndpoint(cfg)
		remote := converter.NewRemotePayloadCodec(converter.RemotePayloadCodecOptions{
			Endpoint:      endpoint,
			ModifyRequest: func(r *http.Request) error { r.Header.Set("Origin", srv.UIAddr()); return nil },
		})
		decoded := proto.Clone(history).(*historypb.History)
		require.NoError(t, visitPayloads(ctx, decoded, func(p *commonpb.Payload) (*commonpb.Payload, error) {
			out, err := remote.Decode([]*commonpb.Payload{p})
			if err != nil {
				return nil, err
			}
			return out[0], nil
		}))
		b, err := proto.Marshal(decoded)
		require.NoError(t, err)
		for _, s := range []string{anchor.Root, txHash, "BatchID", "injected transient failure"} {
			assert.Contains(t, string(b), s)
		}

		var settings struct{ Codec struct{ Endpoint string } }
		getJSON(t, srv.UIAddr()+"/api/v1/settings", &settings)
		assert.Equal(t, endpoint, settings.Codec.Endpoint, "the embedded Web UI decodes through keeper's API")
		req, err := http.NewRequest(http.MethodOptions, endpoint+"/decode", nil)
		require.NoError(t, err)
		req.Header.Set("Origin", srv.UIAddr())
		req.Header.Set("Access-Control-Request-Method", "POST")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusNoContent, resp.StatusCode)
		assert.Equal(t, srv.UIAddr(), resp.Header.Get("Access-Control-Allow-Origin"))
	})

	t.Run("no key reaches the logs", func(t *testing.T) {
		keys, err := os.ReadFile(cfg.CodecKeyFile)
		require.NoError(t, err)
		all := logs.String()
		assert.Contains(t, all, "Temporal payloads are encrypted")
		for _, line := range strings.Split(strings.TrimSpace(string(keys)), "\n") {
			secret := strings.Fields(line)[1]
			assert.NotContains(t, all, secret)
			assert.NotContains(t, all, strings.TrimRight(secret, "="))
		}
	})
}

// visitPayloads calls f on every payload of msg but search attributes, which
// Temporal indexes and no codec touches.
func visitPayloads(ctx context.Context, msg proto.Message, f func(*commonpb.Payload) (*commonpb.Payload, error)) error {
	return proxy.VisitPayloads(ctx, msg, proxy.VisitPayloadsOptions{
		SkipSearchAttributes: true,
		Visitor: func(_ *proxy.VisitPayloadsContext, ps []*commonpb.Payload) ([]*commonpb.Payload, error) {
			out := make([]*commonpb.Payload, len(ps))
			for i, p := range ps {
				var err error
				if out[i], err = f(p); err != nil {
					return nil, err
				}
			}
			return out, nil
		},
	})
}

// writeCodecKeys writes a key file with a fresh key per id, the first
// encrypting.
func writeCodecKeys(t *testing.T, ids ...string) string {
	t.Helper()
	var b strings.Builder
	for _, id := range ids {
		k := make([]byte, 32)
		_, err := rand.Read(k)
		require.NoError(t, err)
		b.WriteString(id + " " + base64.StdEncoding.EncodeToString(k) + "\n")
	}
	p := filepath.Join(t.TempDir(), "codec.keys")
	require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o600))
	return p
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	require.NoError(t, json.NewDecoder(resp.Body).Decode(out))
}
