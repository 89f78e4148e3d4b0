package cli_test

import (
	"context"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/backfill/evmscan"
	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

const cliWallet = "0x52908400098527886e0f7030069857d2e4169ee7"

func newWalletServer(t *testing.T) *server {
	t.Helper()
	st := storetest.SQLite(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	api := &starter.API{Store: st, Logger: log,
		Features: []starter.Feature{&backfill.HTTP{Store: st, Logger: log,
			Networks: []backfill.Network{{Name: "etherlink", Unit: "blocks", Parse: evmscan.ParseAddress}}}}}
	s := &server{st: st}
	h := api.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r)
		if r.Method == http.MethodGet {
			s.reads.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// complete plays a whole backfill of cliWallet on the store, as the
// workflows would.
func complete(t *testing.T, st *store.Store) {
	t.Helper()
	ctx := context.Background()
	_, err := st.BeginScan(ctx, cliWallet, "etherlink")
	require.NoError(t, err)
	require.NoError(t, st.SaveChunk(ctx, cliWallet, "etherlink", store.Chunk{Checkpoint: 10, Scanned: 10, Total: 10,
		Transfers: []store.TransferRecord{{Tx: "0x01", Kind: string(scan.KindNative), Asset: store.NativeAsset, From: "0xa", To: cliWallet, Amount: big.NewInt(42), Direction: string(scan.In), Block: 3}}}))
	require.NoError(t, st.CompleteScan(ctx, cliWallet, "etherlink", store.Holdings{ClosingAt: 9,
		Opening: []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(0), Known: true}},
		Closing: []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(42), Known: true}}}))
	_, err = st.FinishWallet(ctx, cliWallet, backfill.FinishRules)
	require.NoError(t, err)
}

func TestBackfillAddPrintsTheWalletPendingAndAgainSaysNothingRestarted(t *testing.T) {
	s := newWalletServer(t)
	out, _, err := keeper(t, "backfill", "add", "0x52908400098527886E0F7030069857D2E4169EE7", "--api", s.url)
	require.NoError(t, err)
	assert.Contains(t, out, "wallet "+cliWallet+"  PENDING")
	assert.Contains(t, out, "etherlink  PENDING")

	out, _, err = keeper(t, "backfill", "add", cliWallet, "--api", s.url)
	require.NoError(t, err)
	assert.Contains(t, out, "already being backfilled")

	_, _, err = keeper(t, "backfill", "add", "0x1234", "--api", s.url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid_address")
}

func TestBackfillStatusRefreshesUntilDoneThenShowsReconciledBalances(t *testing.T) {
	s := newWalletServer(t)
	_, _, err := keeper(t, "backfill", "add", cliWallet, "--api", s.url)
	require.NoError(t, err)
	out, _, err := keeper(t, "backfill", "status", cliWallet, "--api", s.url, "--once")
	require.NoError(t, err)
	assert.Contains(t, out, "[------------------------]   0.0%")

	shown := s.reads.Load()
	go func() {
		// Complete once the refreshing status has shown the wallet twice.
		if assert.Eventually(t, func() bool { return s.reads.Load() >= shown+2 }, 10*time.Second, time.Millisecond) {
			complete(t, s.st)
		}
	}()
	out, _, err = keeper(t, "backfill", "status", cliWallet, "--api", s.url, "--interval", "10ms")
	require.NoError(t, err)
	frames := strings.Split(out, "wallet ")
	assert.Contains(t, frames[len(frames)-1], "COMPLETED [########################] 100.0%  10/10 blocks, 1 transfers, checkpoint block 9")
	assert.Contains(t, out, "42  reconciled with the chain at 9")
	assert.Contains(t, out, "every balance reconciles with the chain")
	// The item completes and then the wallet is finished, two writes: a poll
	// may land between them. Either way a frame is printed only when
	// something changed.
	for i := 1; i < len(frames); i++ {
		assert.NotEqual(t, frames[i-1], frames[i], "a frame is printed only when something changed")
	}
}

func TestBackfillStatusFailsWhenANetworkWasAbandoned(t *testing.T) {
	s := newWalletServer(t)
	_, _, err := keeper(t, "backfill", "add", cliWallet, "--api", s.url)
	require.NoError(t, err)
	_, _, err = s.st.FailScan(context.Background(), cliWallet, "etherlink", store.ScanFailure{Error: "node gone", Now: time.Now(), MaxRetries: 0})
	require.NoError(t, err)
	out, _, err := keeper(t, "backfill", "status", cliWallet, "--api", s.url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ABANDONED: node gone")
	assert.Contains(t, out, "last error: node gone")
}
