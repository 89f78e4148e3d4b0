package bench

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
)

func TestAChildProcessGivenConfigEnvLoadsTheSameConfiguration(t *testing.T) {
	cfg := config.Default()
	cfg.Chains = []string{"etherlink", "solana"}
	cfg.BatchMinGap = 250 * time.Millisecond
	cfg.AnchorInterval = config.DevAnchorInterval
	cfg.SolanaInterval = config.OptionalDuration{D: 2 * time.Second, Set: true}
	cfg.StoreURL = "postgres://keeper:secret@127.0.0.1:5432/kbench"
	cfg.EVM.RPCURL = "http://127.0.0.1:8545"

	env := map[string]string{}
	for _, kv := range configEnv(cfg) {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	back, err := config.Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	values := func(c config.Config) map[string]string {
		out := map[string]string{}
		for _, s := range c.Settings() {
			out[s.Env] = s.Value
		}
		return out
	}
	assert.Equal(t, values(cfg), values(back))
	assert.Equal(t, cfg.StoreURL, back.StoreURL, "the store URL, which Settings shows without its password")
}

func TestHeartbeatsAreSummedOverTheWorkersMetrics(t *testing.T) {
	metrics := func(n int) string {
		return fmt.Sprintf(`# TYPE temporal_request_total counter
temporal_request_total{namespace="default",operation="RecordActivityTaskHeartbeat",task_queue="keeper-anchor"} %d
temporal_request_total{namespace="default",operation="PollActivityTaskQueue",task_queue="keeper-anchor"} 999
`, n)
	}
	var addrs []string
	for _, n := range []int{3, 4} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, metrics(n)) }))
		t.Cleanup(srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	assert.Equal(t, int64(7), heartbeatsAt(addrs))
}

func TestTheTableHasAColumnPerDeploymentAndTheMultiProcessCosts(t *testing.T) {
	anchor := func(bytesPerEv float64, pg *ServerCost, procs []ProcessCost) *AnchorReport {
		return &AnchorReport{Mode: PhaseBatched, BatchMaxItems: 1024, BytesPerEvidence: bytesPerEv, BytesPerEvidenceChain: bytesPerEv / 2, Postgres: pg, Processes: procs}
	}
	r := &Report{Deployments: []*DeploymentReport{
		{Name: DeploySQLite, Intake: &IntakeReport{}, Batched: anchor(616, nil, nil)},
		{Name: DeployPostgres, Intake: &IntakeReport{}, Batched: anchor(900, &ServerCost{CPUPer1000: 0.42}, nil)},
		{Name: DeployMulti, Intake: &IntakeReport{}, Batched: anchor(901, &ServerCost{CPUPer1000: 0.43}, []ProcessCost{{Name: "worker-2", CPUPer1000: 0.05}})},
	}}
	r.Evaluate()
	var out bytes.Buffer
	r.WriteTable(&out)
	table := out.String()
	for _, want := range []string{"INTAKE", "ANCHORING batched", "sqlite", "postgres", "multi", "616 (308)", "0.42", "PROCESSES (multi, batched)", "worker-2", "postgres: intake p99"} {
		assert.Contains(t, table, want)
	}
	assert.NotContains(t, table, "ANCHORING per-evidence", "no deployment ran it")
}
