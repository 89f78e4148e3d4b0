package node

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// TestReadyzTellsWhereTheWitnessesAreAndStaysReadyWhileOneIsDown: /readyz
// names each witness's state and the lag receipts wait for, as openapi.json
// describes it, and a witness that cannot be reached leaves it ready.
func TestReadyzTellsWhereTheWitnessesAreAndStaysReadyWhileOneIsDown(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	skey, _, err := evlog.GenerateKey("keeper.test/log")
	require.NoError(t, err)
	signer, err := evlog.NewSigner(skey, "keeper.test/log")
	require.NoError(t, err)
	seed := sha256.Sum256([]byte("readyz witness"))
	w, err := evlog.NewWitness("down.example/witness", seed[:])
	require.NoError(t, err)
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens there any more

	cfg := config.Default()
	cfg.Log.Witnesses = []string{w.Key().Text + " " + down.URL}
	n := &Node{Cfg: cfg, Store: st, Logger: slog.New(slog.DiscardHandler)}
	_, err = logsvc.ListWitnesses(ctx, st, signer, []evlog.WitnessKey{w.Key()}, 1, time.Now())
	require.NoError(t, err)
	wg := &logsvc.Witnessing{Store: st, LogKey: signer.Key(), Witnesses: []logsvc.Witness{{Key: w.Key(), URL: down.URL}}, Quorum: 1,
		Interval: time.Second, Logger: slog.New(slog.DiscardHandler)}
	n.witnessing.Store(wg)
	seq := &logsvc.Sequencer{Store: st, Signer: signer, Interval: time.Second, Logger: slog.New(slog.DiscardHandler)}
	ins, err := st.InsertEvidenceBatch(ctx, []store.NewEvidence{{Digest: sha256.Sum256([]byte("evidence")), Chains: []string{"stub"}, Priority: 5}})
	require.NoError(t, err)
	require.NoError(t, ins[0].Err)
	_, err = seq.Sync(ctx)
	require.NoError(t, err)
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wg.Run(runCtx)
	}()
	require.Eventually(t, func() bool { return !wg.Status()[0].OK && wg.Lag().Latest == 1 }, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done

	srv := httptest.NewServer(openapitest.Handler(t, starter.Ready(nil, func() bool { return false }, nil, n.witnessReadyDetail)))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/readyz")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "a witness that is down does not make the node unready")
	var got struct {
		Witnesses struct {
			Quorum, Listed int
			Status         []logsvc.WitnessStatus
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&got))
	assert.Equal(t, 1, got.Witnesses.Quorum)
	assert.Equal(t, 1, got.Witnesses.Listed)
	require.Len(t, got.Witnesses.Status, 1)
	assert.Equal(t, "down.example/witness", got.Witnesses.Status[0].Name)
	assert.False(t, got.Witnesses.Status[0].OK)
	assert.Contains(t, got.Witnesses.Status[0].Reason, "connection refused")
	assert.False(t, got.Witnesses.Status[0].Since.IsZero())
}
