package testsuite

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/bench"
)

// TestBenchCadenceDatesEachEvidenceFromTheBlockThatMadeItFinal runs `keeper
// bench --phases cadence` with tiny numbers on keeper dev's local chains:
// every evidence confirmed is dated from the block (slot) that made the
// last of its anchors final, step by step from intake, and the report holds
// the target on it; never how fast anything was.
func TestBenchCadenceDatesEachEvidenceFromTheBlockThatMadeItFinal(t *testing.T) {
	endToEnd(t)
	cfg := testConfig("")
	cfg.Chains = []string{"etherlink", "solana"}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	r, err := bench.Run(ctx, bench.Options{
		Config: cfg, Phases: []string{bench.PhaseCadence}, CadenceRates: []float64{5}, CadenceFor: 2 * time.Second,
		Drain: time.Minute, Dir: t.TempDir(), Logger: testLogger(t),
	})
	require.NoError(t, err)
	r.Evaluate()

	require.Len(t, r.Deployments, 1)
	require.NotNil(t, r.Deployments[0].Cadence)
	require.Len(t, r.Deployments[0].Cadence.Rows, 1)
	row := r.Deployments[0].Cadence.Rows[0]
	require.Positive(t, row.Confirmed)
	assert.Equal(t, []string{"etherlink", "solana"}, row.Watched, "both local chains followed")
	require.NotNil(t, row.Path)
	assert.Equal(t, row.Confirmed, row.FinalToConfirmed.N, "every evidence confirmed is dated from its finalizing block")
	assert.Equal(t, row.Confirmed, row.Path.Evidence)
	assert.Positive(t, row.Path.IncludedToFinal.P50, "the chain's finality lies between an anchor's block and the block that made it final")

	var table bytes.Buffer
	r.WriteTable(&table)
	for _, part := range []string{"finalizing block → confirmed p50 / p99", "CADENCE PATH", "cadence at 5/s: finalizing block → confirmed p99"} {
		assert.Contains(t, table.String(), part)
	}
}
