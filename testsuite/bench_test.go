package testsuite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx": is the local PostgreSQL there

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/bench"
)

// TestBenchSmokeProducesACompleteReport runs `keeper bench` with tiny numbers
// on the stub chain: it checks the benchmark still works end to end and
// writes every part of its report, never how fast anything was.
func TestBenchSmokeProducesACompleteReport(t *testing.T) {
	endToEnd(t)
	cfg := testConfig("")
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := bench.Run(ctx, bench.Options{
		Config: cfg, Duration: 2 * time.Second, Rate: 40, Concurrency: 4, AnchorRate: 40, BulkClients: 2, BulkSize: 10,
		LowLoadEvery: 250 * time.Millisecond, LowLoadFor: time.Second, Drain: time.Minute,
		CadenceRates: []float64{20}, CadenceFor: 2 * time.Second,
		Dir: filepath.Join(dir, "stacks"), Logger: testLogger(t),
	})
	require.NoError(t, err)
	r.Evaluate()

	require.Len(t, r.Deployments, 1)
	d := r.Deployments[0]
	assert.Equal(t, bench.DeploySQLite, d.Name, "one process on SQLite when nothing else is asked for")
	require.NotNil(t, d.LowLoad)
	assert.Positive(t, d.LowLoad.IntakeToSubmitted.N, "low load: submission times of the evidence")
	assert.Positive(t, d.LowLoad.IntakeToConfirmed.N, "low load: confirmation times of the evidence")
	require.NotNil(t, d.Cadence)
	require.Len(t, d.Cadence.Rows, 1)
	assert.Positive(t, d.Cadence.Rows[0].Confirmed, "cadence: evidence confirmed")
	assert.Positive(t, d.Cadence.Rows[0].Txs["stub"], "cadence: transactions counted")
	assert.Positive(t, d.Cadence.Rows[0].ActionsPerEv, "cadence: actions counted")
	require.NotNil(t, d.Intake)
	assert.Positive(t, d.Intake.Requests)
	assert.Equal(t, d.Intake.Requests, d.Intake.Latency.N)
	for _, a := range []*bench.AnchorReport{d.Batched, d.Bulk, d.PerEvidence} {
		checkAnchoring(t, d.Name, a, 1)
		assert.Nil(t, a.Postgres, "%s: no PostgreSQL server to count", a.Mode)
		assert.Empty(t, a.Processes, "%s: one process", a.Mode)
	}
	assert.Equal(t, 1, d.PerEvidence.BatchMaxItems)
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
	assert.Equal(t, d.Batched.Confirmed, back.Deployments[0].Batched.Confirmed)
	png := filepath.Join(dir, "bench.png")
	require.NoError(t, r.WritePlot(png))
	img, err := os.ReadFile(png)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(img, []byte("\x89PNG")), "the chart is a PNG")
}

// checkAnchoring checks an anchoring phase's report is complete and that
// it lost nothing: everything accepted was confirmed.
func checkAnchoring(t *testing.T, deployment string, a *bench.AnchorReport, chains int) {
	t.Helper()
	require.NotNil(t, a, deployment)
	what := deployment + " " + a.Mode
	assert.Positive(t, a.Intake.Accepted, what)
	assert.Positive(t, a.Confirmed, "%s: some evidence confirmed", what)
	assert.Positive(t, a.Batches, what)
	assert.Positive(t, a.Actions.WorkflowStarts, "%s: actions counted from the histories", what)
	assert.Positive(t, a.Actions.ActivityAttempts, what)
	assert.Positive(t, a.CPUSeconds, what)
	assert.Positive(t, a.PeakRSSMiB, what)
	assert.NotEmpty(t, a.Series, what)
	assert.Positive(t, a.StoreBytes, "%s: keeper's store grew", what)
	assert.Equal(t, a.Intake.Accepted, a.StoredEvidence, "%s: every evidence accepted was stored", what)
	assert.Positive(t, a.BytesPerEvidence, what)
	assert.InDelta(t, a.BytesPerEvidence/float64(chains), a.BytesPerEvidenceChain, 1, what)
	if a.Mode == bench.PhaseBatched {
		assert.True(t, a.Drained, what)
		assert.Equal(t, a.Intake.Accepted, a.Confirmed, "%s: everything accepted was confirmed", what)
	}
}

// TestBenchSmokeMeasuresThePostgreSQLAndMultiProcessDeploymentsSideBySide
// runs `keeper bench --deployments postgres,multi --phases intake,batched`
// with tiny numbers on the local EVM chain (the stub chain lives in one
// process, so the multi-process deployment cannot use it): both report
// complete phases, the PostgreSQL server's CPU, and, for the processes,
// each one's CPU and memory. It needs the local PostgreSQL.
func TestBenchSmokeMeasuresThePostgreSQLAndMultiProcessDeploymentsSideBySide(t *testing.T) {
	endToEnd(t)
	pg := benchPostgres(t)
	bin := keeperBinary(t)
	cfg := testConfig("")
	cfg.Chains = []string{"etherlink"}
	// The local chain makes about a block a second: final at 2 blocks deep
	// instead of its 32, so each deployment's drain takes seconds, not 33.
	cfg.EVM.Confirmations = 2
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := bench.Run(ctx, bench.Options{
		Config: cfg, Deployments: []string{bench.DeployPostgres, bench.DeployMulti}, Phases: []string{bench.PhaseIntake, bench.PhaseBatched},
		// 200 evidence in the batched phase: their rows outgrow the free
		// space of the evidence table's last page, so its store must grow.
		Duration: 2 * time.Second, Rate: 40, Concurrency: 4, AnchorRate: 100, Drain: time.Minute,
		Dir: t.TempDir(), Logger: testLogger(t), PostgresURL: pg, Binary: bin,
	})
	require.NoError(t, err)
	r.Evaluate()

	require.Len(t, r.Deployments, 2)
	for _, d := range r.Deployments {
		require.NotNil(t, d.Intake, d.Name)
		assert.Positive(t, d.Intake.Accepted, d.Name)
		checkAnchoring(t, d.Name, d.Batched, 1)
		require.NotNil(t, d.Batched.Postgres, "%s: the PostgreSQL server's CPU", d.Name)
		assert.Positive(t, d.Batched.Postgres.CPUSeconds, d.Name)
	}
	multi := r.Deployments[1]
	var names []string
	for _, p := range multi.Batched.Processes {
		names = append(names, p.Name)
		assert.Positive(t, p.PeakRSSMiB, p.Name)
		if p.Name != "devchains" { // its blocks may cost less than a clock tick
			assert.Positive(t, p.CPUSeconds, "%s worked during the phase", p.Name)
		}
	}
	assert.Equal(t, []string{"devchains", "devserver", "api-1", "api-2", "worker-1", "worker-2", "bench"}, names)

	var table bytes.Buffer
	r.WriteTable(&table)
	for _, part := range []string{"ANCHORING batched", "PROCESSES (multi, batched)", "CPU s / 1,000 evidence, PostgreSQL", "store bytes / evidence"} {
		assert.Contains(t, table.String(), part)
	}
}

// benchPostgres is the local PostgreSQL server the bench's PostgreSQL
// deployments make their databases on (KEEPER_TEST_POSTGRES_URL, or the
// trust-authenticated one developers and CI have). Without one the test is
// skipped, except in CI.
func benchPostgres(t *testing.T) string {
	t.Helper()
	candidates := []string{"postgres://root@127.0.0.1:5432?sslmode=disable", "postgres://postgres@127.0.0.1:5432?sslmode=disable"}
	if u := os.Getenv("KEEPER_TEST_POSTGRES_URL"); u != "" {
		candidates = []string{u}
	}
	for _, u := range candidates {
		admin, err := url.Parse(u)
		if err != nil {
			continue
		}
		admin.Path = "/postgres"
		db, err := sql.Open("pgx", admin.String())
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = db.PingContext(ctx)
			cancel()
			db.Close()
		}
		if err == nil {
			return u
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("no PostgreSQL to run the bench's PostgreSQL deployments on (set KEEPER_TEST_POSTGRES_URL)")
	}
	t.Skip("no PostgreSQL to run the bench's PostgreSQL deployments on (set KEEPER_TEST_POSTGRES_URL)")
	return ""
}

// TestBenchBackfillSmokeMeasuresAWalletOnEachLocalChain runs `keeper bench
// backfill` on tiny histories: every network's wallet is scanned, its
// transfers counted and its workflows' actions read.
func TestBenchBackfillSmokeMeasuresAWalletOnEachLocalChain(t *testing.T) {
	endToEnd(t)
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
	endToEnd(t)
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
