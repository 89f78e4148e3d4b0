package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
)

// watchOf is a watch that saw chain's head and finalized block move as
// given (block → when).
func watchOf(chain string, heads, finals []mark) *blockWatch {
	return &blockWatch{chains: map[string]*heights{chain: {heads: heads, finals: finals}}}
}

func TestTheBlockThatMakesAnAnchorFinalIsTheFirstSeenWithFinalityAtOrPastIt(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// Finality jumped from 8 to 12 at 3 s: blocks 9 to 12 became final then.
	w := watchOf("etherlink", []mark{{40, at(1)}, {41, at(2)}, {44, at(3)}}, []mark{{8, at(1)}, {12, at(3)}, {13, at(4)}})
	got, ok := w.final("etherlink", 10)
	require.True(t, ok)
	assert.Equal(t, at(3), got)
	got, ok = w.included("etherlink", 42)
	require.True(t, ok)
	assert.Equal(t, at(3), got, "blocks 42 and 43 appeared with 44")
	_, ok = w.final("etherlink", 14)
	assert.False(t, ok, "not final yet")
	_, ok = w.final("solana", 1)
	assert.False(t, ok, "not watched")
}

func TestTheWatchReadsTheHeadAndTheFinalizedBlockOfEachChainInOneRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var calls []struct {
			ID     int               `json:"id"`
			Method string            `json:"method"`
			Params []json.RawMessage `json:"params"`
		}
		require.NoError(t, json.Unmarshal(body, &calls), "one batch request")
		var out []map[string]any
		for _, c := range calls {
			var res any
			switch {
			case c.Method == "eth_blockNumber":
				res = "0x64"
			case c.Method == "eth_getBlockByNumber" && string(c.Params[0]) == `"finalized"`:
				res = map[string]string{"number": "0x44"}
			case c.Method == "getSlot" && bytes.Contains(c.Params[0], []byte("finalized")):
				res = 268
			case c.Method == "getSlot":
				res = 300
			}
			out = append(out, map[string]any{"jsonrpc": "2.0", "id": c.ID, "result": res})
		}
		_ = json.NewEncoder(w).Encode(out)
	}))
	t.Cleanup(srv.Close)
	ctx := context.Background()
	head, fin, err := evmHeights(srv.Client(), srv.URL)(ctx)
	require.NoError(t, err)
	assert.Equal(t, []uint64{100, 68}, []uint64{head, fin})
	head, fin, err = solanaHeights(srv.Client(), srv.URL)(ctx)
	require.NoError(t, err)
	assert.Equal(t, []uint64{300, 268}, []uint64{head, fin})
}

func TestFinalToConfirmedRunsFromTheBlockThatMadeTheEvidencesLastAnchorFinal(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	w := &blockWatch{chains: map[string]*heights{
		"etherlink": {heads: []mark{{10, at(900)}}, finals: []mark{{10, at(32900)}}},
		"solana":    {heads: []mark{{500, at(400)}}, finals: []mark{{500, at(13200)}}},
	}}
	bs := []store.BatchTiming{
		{ID: 1, Chain: "etherlink", CreatedAt: at(200), FirstTx: at(250), State: store.BatchConfirmed},
		{ID: 2, Chain: "solana", CreatedAt: at(200), FirstTx: at(230), State: store.BatchConfirmed},
		{ID: 3, Chain: "etherlink", CreatedAt: at(200), FirstTx: at(260)},
	}
	cs := map[int64]*confirmed{
		1: {block: 10, completed: at(33000), task: at(33020), recorded: at(33050)},
		2: {block: 500, completed: at(13300), task: at(13310), recorded: at(13320)},
	}
	evs := []store.EvidenceTiming{
		{ID: "ev_a", Status: store.StatusConfirmed, UpdatedAt: at(33050), Batches: []int64{1, 2}},
		{ID: "ev_b", Status: store.StatusPending, Batches: []int64{3}},   // not confirmed
		{ID: "ev_c", Status: store.StatusConfirmed, Batches: []int64{1}}, // not from this load
	}
	due := map[string]time.Time{"ev_a": at(0), "ev_b": at(0)}
	f, path := cadencePath(evs, bs, due, cs, w)
	assert.Equal(t, 1, f.N, "only the confirmed evidence of this load")
	assert.Equal(t, 150.0, f.P99, "from the EVM block that made it final, not Solana's earlier one")
	assert.Equal(t, 1, path.Evidence)
	steps := []Latency{path.IntakeToFormed, path.FormedToJournaled, path.JournaledToIncluded, path.IncludedToFinal,
		path.FinalToCompleted, path.CompletedToTask, path.TaskToRecorded, path.RecordedToConfirmed}
	var got []float64
	var sum float64
	for _, s := range steps {
		got = append(got, s.P50)
		sum += s.P50
	}
	assert.Equal(t, []float64{200, 50, 650, 32000, 100, 20, 30, 0}, got, "each step along the etherlink anchor")
	assert.Equal(t, 33050.0, sum, "the steps add up to intake → confirmed")
}

func TestEachCadenceRateHoldsConfirmationToASecondAfterTheFinalizingBlock(t *testing.T) {
	row := func(rate, p99 float64, watched bool) CadenceRow {
		r := CadenceRow{Rate: rate, Confirmed: 100, FinalToConfirmed: Latency{N: 100, P50: 40, P99: p99}}
		if watched {
			r.Path = &CadencePath{Evidence: 100, FinalToCompleted: Latency{N: 100, P50: 20, P99: p99 - 60}}
		}
		return r
	}
	r := &Report{Deployments: []*DeploymentReport{{Name: DeploySQLite, Cadence: &CadenceReport{Rows: []CadenceRow{
		row(10, 310, true), row(1000, 1200, true), row(100, 0, false),
	}}}}}
	r.Evaluate()
	got := map[string]Target{}
	for _, g := range r.Targets {
		got[g.Name] = g
	}
	g := got["cadence at 10/s: finalizing block → confirmed p99"]
	assert.Equal(t, VerdictMet, g.Verdict)
	assert.Equal(t, "p50 40 ms, p99 310 ms (100 of 100 confirmed)", g.Measured)
	assert.Equal(t, VerdictMissed, got["cadence at 1000/s: finalizing block → confirmed p99"].Verdict)
	assert.NotContains(t, got, "cadence at 100/s: finalizing block → confirmed p99", "chains not watched: nothing measured")

	var out bytes.Buffer
	r.WriteTable(&out)
	table := out.String()
	for _, want := range []string{"finalizing block → confirmed p50 / p99", "40 ms / 310 ms", "– (chains not watched)",
		"CADENCE PATH", "→ ConfirmAnchor completed", "20 ms / 250 ms"} {
		assert.Contains(t, table, want)
	}
}
