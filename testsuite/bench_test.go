package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/bench"
)

// TestBenchSmokeProducesACompleteReport runs `keeper bench` with tiny numbers
// on the stub chain: it checks the benchmark still works end to end and
// writes every part of its report, never how fast anything was.
func TestBenchSmokeProducesACompleteReport(t *testing.T) {
	cfg := testConfig("")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := bench.Run(ctx, bench.Options{
		Config: cfg, Duration: 2 * time.Second, Rate: 40, Concurrency: 4, AnchorRate: 40,
		LowLoadEvery: 250 * time.Millisecond, LowLoadFor: time.Second, Drain: time.Minute,
		CadenceRates: []float64{20}, CadenceFor: 2 * time.Second,
		Dir: filepath.Join(dir, "stacks"), Logger: testLogger(t),
	})
	require.NoError(t, err)
	r.Evaluate()

	require.NotNil(t, r.LowLoad)
	assert.Positive(t, r.LowLoad.IntakeToSubmitted.N, "low load: submission times of the evidence")
	assert.Positive(t, r.LowLoad.IntakeToConfirmed.N, "low load: confirmation times of the evidence")
	require.NotNil(t, r.Cadence)
	require.Len(t, r.Cadence.Rows, 1)
	assert.Positive(t, r.Cadence.Rows[0].Confirmed, "cadence: evidence confirmed")
	assert.Positive(t, r.Cadence.Rows[0].Txs["stub"], "cadence: transactions counted")
	assert.Positive(t, r.Cadence.Rows[0].ActionsPerEv, "cadence: actions counted")
	require.NotNil(t, r.Intake)
	assert.Positive(t, r.Intake.Requests)
	assert.Equal(t, r.Intake.Requests, r.Intake.Latency.N)
	for _, a := range []*bench.AnchorReport{r.Batched, r.PerEvidence} {
		require.NotNil(t, a)
		assert.Positive(t, a.Intake.Accepted, a.Mode)
		assert.Positive(t, a.Confirmed, "%s: some evidence confirmed", a.Mode)
		assert.Positive(t, a.Batches, a.Mode)
		assert.Positive(t, a.Actions.WorkflowStarts, "%s: actions counted from the histories", a.Mode)
		assert.Positive(t, a.Actions.ActivityAttempts, a.Mode)
		assert.Positive(t, a.CPUSeconds, a.Mode)
		assert.Positive(t, a.PeakRSSMiB, a.Mode)
		assert.NotEmpty(t, a.Series, a.Mode)
	}
	assert.Equal(t, 1, r.PerEvidence.BatchMaxItems)
	assert.Equal(t, r.Batched.Confirmed, r.Batched.Intake.Accepted, "batched: everything accepted was confirmed")
	assert.NotEmpty(t, r.Targets)
	require.NotNil(t, r.Memory)
	assert.NotEmpty(t, r.Memory.Samples)

	var table bytes.Buffer
	r.WriteTable(&table)
	for _, part := range []string{"INTAKE", "ANCHORING", "LOW LOAD", "CADENCE", "TARGETS"} {
		assert.Contains(t, table.String(), part)
	}
	out := filepath.Join(dir, "bench.json")
	require.NoError(t, r.WriteJSON(out))
	raw, err := os.ReadFile(out)
	require.NoError(t, err)
	var back bench.Report
	require.NoError(t, json.Unmarshal(raw, &back))
	assert.Equal(t, r.Batched.Confirmed, back.Batched.Confirmed)
	png := filepath.Join(dir, "bench.png")
	require.NoError(t, r.WritePlot(png))
	img, err := os.ReadFile(png)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(img, []byte("\x89PNG")), "the chart is a PNG")
}

// TestBenchBackfillSmokeMeasuresAWalletOnEachLocalChain runs `keeper bench
// backfill` on tiny histories: every network's wallet is scanned, its
// transfers counted and its workflows' actions read.
func TestBenchBackfillSmokeMeasuresAWalletOnEachLocalChain(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := bench.RunBackfill(ctx, bench.BackfillOptions{
		Config: testConfig(""), EVMRounds: 3, EVMBlocks: 2, SolanaTxs: 3, Limit: time.Minute,
		Dir: t.TempDir(), Logger: testLogger(t),
	})
	require.NoError(t, err)
	require.Len(t, r.Backfill, 2)
	for _, b := range r.Backfill {
		assert.Equal(t, "COMPLETED", b.Status, b.Network)
		assert.Positive(t, b.Scanned, b.Network)
		assert.Positive(t, b.Transfers, b.Network)
		assert.Positive(t, b.ScanS, b.Network)
		assert.GreaterOrEqual(t, b.DoneS, b.ScanS, b.Network)
	}
	assert.Equal(t, 4, r.Actions.Workflows, "a WalletSync and a Backfill per network")
	assert.Positive(t, r.Actions.ActivityAttempts)
	assert.Positive(t, r.CPUSeconds)
	var table bytes.Buffer
	r.WriteTable(&table)
	assert.Contains(t, table.String(), "BACKFILL")
	assert.Contains(t, table.String(), "solana")
}

// TestBenchEpochSmokeFollowsAnEpochThroughEveryStage runs `keeper bench
// epoch` with a few thousand accounts on the stub chain.
func TestBenchEpochSmokeFollowsAnEpochThroughEveryStage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := bench.RunEpoch(ctx, bench.EpochOptions{
		Config: testConfig(""), Accounts: 3000, Pool: "1000000007", Limit: 2 * time.Minute, Dir: t.TempDir(), Logger: testLogger(t),
	})
	require.NoError(t, err)
	e := r.Epoch
	require.NotNil(t, e)
	assert.Equal(t, "completed", e.Status)
	assert.Equal(t, "1000000007", e.TotalPaid, "the split pays out the whole pool")
	assert.Equal(t, 3000, e.Intents)
	for _, stage := range []string{"seal", "compute", "artifacts", "intents", "anchor"} {
		assert.Contains(t, e.Stages, stage)
	}
	assert.Positive(t, e.ComputedS)
	assert.GreaterOrEqual(t, e.CompletedS, e.ComputedS)
	assert.Positive(t, r.Actions.ActivityAttempts)
	var table bytes.Buffer
	r.WriteTable(&table)
	assert.Contains(t, table.String(), "EPOCH")
}
