package backfill_test

import (
	"context"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/backfill/evmscan"
	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/backfill/solscan"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/temporalfake"
	"github.com/keeperhq/keeper/internal/workflows"
)

const (
	evmWallet = "0x52908400098527886e0f7030069857d2e4169ee7"
	solWallet = "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"
)

// syncs lists the WalletSync starts the backfill dispatcher handed to
// Temporal, checking each is the signal-with-start of its wallet's
// workflow on the backfill queue, with the networks the input names.
func syncs(t *testing.T, c *temporalfake.Client) []workflows.WalletSyncInput {
	t.Helper()
	var out []workflows.WalletSyncInput
	for _, s := range c.Starts() {
		in := s.Input().(workflows.WalletSyncInput)
		require.Equal(t, workflows.WalletWorkflowID(in.Wallet), s.ID)
		require.Equal(t, workflows.SignalSync, s.Signal)
		require.Equal(t, workflows.BackfillTaskQueue, s.Options.TaskQueue)
		require.Equal(t, in.Networks[0], s.SignalArg.(workflows.SyncSignal).Networks[0], "the signal and the input name the same networks")
		out = append(out, in)
	}
	return out
}

// fixture serves the API with wallet backfill's routes over a store.
type fixture struct {
	st  *store.Store
	api *starter.API
	w   *backfill.HTTP
	h   http.Handler
}

// newWalletFixture serves the wallet routes on etherlink (from block 100)
// and solana, waking the returned dispatcher, which nothing runs yet and
// which has no Temporal.
func newWalletFixture(t *testing.T) (*fixture, *backfill.Dispatcher) {
	t.Helper()
	st := storetest.SQLite(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	d := &backfill.Dispatcher{Store: st, Sweep: time.Hour, Logger: log}
	w := &backfill.HTTP{Store: st, Wake: d.Wake, Logger: log, Networks: []backfill.Network{
		{Name: "etherlink", Unit: "blocks", Start: 100, Parse: evmscan.ParseAddress},
		{Name: "solana", Unit: "signatures", Parse: solscan.ParseAddress},
	}}
	a := &starter.API{Store: st,
		Features: []starter.Feature{w}, Logger: log}
	return &fixture{st: st, api: a, w: w, h: openapitest.Handler(t, a.Handler())}, d
}

// do sends a request, its body (if any) as JSON.
func (f *fixture) do(t *testing.T, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	return apitest.Do(t, f.h, method, path, body, nil)
}

func TestBadWalletRequestsAreRefusedWithAJSONErrorAndStoreNothing(t *testing.T) {
	f, _ := newWalletFixture(t)
	cases := []struct {
		name, body, code, field string
	}{
		{"empty body", ``, "invalid_json", ""},
		{"not an object", `[]`, "invalid_json", ""},
		{"no address", `{"networks":["etherlink"]}`, "missing_field", "address"},
		{"empty address", `{"address":""}`, "missing_field", "address"},
		{"address of the wrong type", `{"address":42}`, "invalid_type", "address"},
		{"unknown field", `{"address":"` + evmWallet + `","chain":"etherlink"}`, "unknown_field", "chain"},
		{"duplicate key", `{"address":"` + evmWallet + `","address":"` + evmWallet + `"}`, "duplicate_field", "address"},
		{"empty networks", `{"address":"` + evmWallet + `","networks":[]}`, "missing_field", "networks"},
		{"unknown network", `{"address":"` + evmWallet + `","networks":["bitcoin"]}`, "unknown_network", "networks"},
		{"duplicate network", `{"address":"` + evmWallet + `","networks":["etherlink","etherlink"]}`, "duplicate_network", "networks"},
		{"EVM address on solana", `{"address":"` + evmWallet + `","networks":["etherlink","solana"]}`, "invalid_address", "address"},
		{"Solana key on etherlink", `{"address":"` + solWallet + `","networks":["etherlink"]}`, "invalid_address", "address"},
		{"bad EIP-55 checksum", `{"address":"0x52908400098527886E0F7030069857D2E4169Ee7"}`, "invalid_address", "address"},
		{"short hex", `{"address":"0x1234"}`, "invalid_address", "address"},
		{"no network fits", `{"address":"hello"}`, "invalid_address", "address"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rec := f.do(t, http.MethodPost, "/v1/wallets", c.body)
			require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
			e := apitest.Decode[struct{ Code, Message, Field string }](t, rec)
			assert.Equal(t, c.code, e.Code)
			assert.Equal(t, c.field, e.Field)
			assert.NotEmpty(t, e.Message)
		})
	}
	due, err := f.st.UnstartedWallets(context.Background(), 10)
	require.NoError(t, err)
	assert.Empty(t, due, "nothing was stored")
}

func TestAddingAWalletStoresItPendingAndAddingItAgainWhileItRunsIsANoOp(t *testing.T) {
	f, _ := newWalletFixture(t)
	rec := f.do(t, http.MethodPost, "/v1/wallets", `{"address":"0x52908400098527886E0F7030069857D2E4169EE7"}`)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	assert.Equal(t, "/v1/wallets/"+evmWallet, rec.Header().Get("Location"))
	w := apitest.Decode[api.Wallet](t, rec)
	assert.Equal(t, evmWallet, w.Address, "EVM addresses are stored in lower case")
	require.Len(t, w.Networks, 1, "an EVM address fits etherlink only")
	assert.Equal(t, "etherlink", w.Networks[0].Network)
	assert.Equal(t, "PENDING", w.Networks[0].Status)
	assert.Equal(t, uint64(100), w.Networks[0].Progress.Start)
	assert.Equal(t, "blocks", w.Networks[0].Progress.Unit)
	assert.False(t, w.Done)

	rec = f.do(t, http.MethodPost, "/v1/wallets", `{"address":"`+evmWallet+`","networks":["etherlink"]}`)
	require.Equal(t, http.StatusOK, rec.Code, "already at work")
	assert.Equal(t, "PENDING", apitest.Decode[api.Wallet](t, rec).Networks[0].Status)

	rec = f.do(t, http.MethodPost, "/v1/wallets", `{"address":"`+solWallet+`"}`)
	require.Equal(t, http.StatusAccepted, rec.Code)
	assert.Equal(t, "signatures", apitest.Decode[api.Wallet](t, rec).Networks[0].Progress.Unit)
}

func TestTheWalletStatusShowsProgressRetriesAndReconciledBalances(t *testing.T) {
	f, _ := newWalletFixture(t)
	ctx := context.Background()
	require.Equal(t, http.StatusAccepted, f.do(t, http.MethodPost, "/v1/wallets", `{"address":"`+evmWallet+`"}`).Code)
	_, err := f.st.BeginScan(ctx, evmWallet, "etherlink")
	require.NoError(t, err)
	require.NoError(t, f.st.SetScanTarget(ctx, evmWallet, "etherlink", 299))
	require.NoError(t, f.st.SaveChunk(ctx, evmWallet, "etherlink", store.Chunk{Checkpoint: 150, Scanned: 50, Total: 200,
		Transfers: []store.TransferRecord{{Tx: "0x01", Kind: string(scan.KindNative), Asset: store.NativeAsset, From: "0xa", To: evmWallet, Amount: big.NewInt(7), Direction: string(scan.In), Block: 120}}}))

	w := apitest.Decode[api.Wallet](t, f.do(t, http.MethodGet, "/v1/wallets/0x52908400098527886E0F7030069857D2E4169EE7", ""))
	n := w.Networks[0]
	assert.Equal(t, "RUNNING", n.Status)
	assert.Equal(t, 25.0, n.Progress.Percent)
	assert.Equal(t, map[string]any{"block": float64(149)}, n.Checkpoint)
	assert.Equal(t, 1, n.Transfers)

	_, _, err = f.st.FailScan(ctx, evmWallet, "etherlink", store.ScanFailure{Error: "node down", Now: time.Now(), MaxRetries: 5, Delay: func(int) time.Duration { return time.Minute }})
	require.NoError(t, err)
	w = apitest.Decode[api.Wallet](t, f.do(t, http.MethodGet, "/v1/wallets/"+evmWallet, ""))
	assert.Equal(t, "FAILED", w.Status)
	assert.False(t, w.Done, "a retry is due")
	assert.Equal(t, 1, w.Networks[0].RetryCount)
	assert.NotEmpty(t, w.Networks[0].NextRetryAt)
	assert.Equal(t, "node down", w.Networks[0].LastError)

	_, err = f.st.BeginScan(ctx, evmWallet, "etherlink")
	require.NoError(t, err)
	require.NoError(t, f.st.SaveChunk(ctx, evmWallet, "etherlink", store.Chunk{Checkpoint: 300, Scanned: 200, Total: 200}))
	require.NoError(t, f.st.CompleteScan(ctx, evmWallet, "etherlink", store.Holdings{OpeningAt: 99, ClosingAt: 299,
		Opening: []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(0), Known: true}},
		Closing: []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(7), Known: true}}}))
	_, err = f.st.FinishWallet(ctx, evmWallet, backfill.FinishRules)
	require.NoError(t, err)
	w = apitest.Decode[api.Wallet](t, f.do(t, http.MethodGet, "/v1/wallets/"+evmWallet, ""))
	assert.Equal(t, "COMPLETED", w.Status)
	assert.True(t, w.Done)
	assert.Equal(t, 100.0, w.Networks[0].Progress.Percent)
	assert.Zero(t, w.Networks[0].RetryCount, "reset on success")
	require.Len(t, w.Balances, 1)
	assert.Equal(t, "7", w.Balances[0].Balance)
	assert.Equal(t, "7", w.Balances[0].Chain)
	require.NotNil(t, w.Reconciled)
	assert.True(t, *w.Reconciled)

	page := apitest.Decode[struct {
		Items []struct {
			Tx, Kind, Direction, Class, Amount string
			Block                              uint64
		} `json:"items"`
		NextCursor string `json:"next_cursor"`
	}](t, f.do(t, http.MethodGet, "/v1/wallets/"+evmWallet+"/transfers?network=etherlink&limit=10", ""))
	require.Len(t, page.Items, 1)
	assert.Equal(t, "0x01", page.Items[0].Tx)
	assert.Equal(t, "received", page.Items[0].Class)
	assert.Equal(t, "7", page.Items[0].Amount)
	assert.Empty(t, page.NextCursor)
}

func TestWalletReadsRefuseBadAddressesAndParameters(t *testing.T) {
	f, _ := newWalletFixture(t)
	require.Equal(t, http.StatusAccepted, f.do(t, http.MethodPost, "/v1/wallets", `{"address":"`+evmWallet+`"}`).Code)
	for path, want := range map[string]struct {
		status      int
		code, field string
	}{
		"/v1/wallets/nope": {http.StatusBadRequest, "invalid_address", "address"},
		"/v1/wallets/0x0000000000000000000000000000000000000001":           {http.StatusNotFound, "not_found", "address"},
		"/v1/wallets/" + evmWallet + "/transfers?network=bitcoin":          {http.StatusBadRequest, "unknown_network", "network"},
		"/v1/wallets/" + evmWallet + "/transfers?limit=0":                  {http.StatusBadRequest, "invalid_limit", "limit"},
		"/v1/wallets/" + evmWallet + "/transfers?cursor=zz":                {http.StatusBadRequest, "invalid_cursor", "cursor"},
		"/v1/wallets/" + evmWallet + "/transfers?page=2":                   {http.StatusBadRequest, "unknown_parameter", "page"},
		"/v1/wallets/0x0000000000000000000000000000000000000001/transfers": {http.StatusNotFound, "not_found", "address"},
	} {
		rec := f.do(t, http.MethodGet, path, "")
		require.Equal(t, want.status, rec.Code, "%s: %s", path, rec.Body.String())
		e := apitest.Decode[struct{ Code, Field string }](t, rec)
		assert.Equal(t, want.code, e.Code, path)
		assert.Equal(t, want.field, e.Field, path)
	}
	assert.Equal(t, http.StatusMethodNotAllowed, f.do(t, http.MethodDelete, "/v1/wallets/"+evmWallet, "").Code)
}

func TestTheDispatcherHandsEachAddToTemporalOnceAndRetriesWhileItIsDown(t *testing.T) {
	f, d := newWalletFixture(t)
	sig := &temporalfake.Client{}
	sig.FailNext(2) // Temporal is down for the first two calls
	d.Temporal, d.Policy = sig, workflows.BackfillPolicy{ScanTimeout: time.Hour}
	d.Sweep = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	require.Equal(t, http.StatusAccepted, f.do(t, http.MethodPost, "/v1/wallets", `{"address":"`+evmWallet+`"}`).Code)
	require.Eventually(t, func() bool { return len(sig.Starts()) == 1 }, 10*time.Second, 5*time.Millisecond)
	require.Equal(t, http.StatusOK, f.do(t, http.MethodPost, "/v1/wallets", `{"address":"`+evmWallet+`"}`).Code)
	assert.Never(t, func() bool { return len(sig.Starts()) > 1 }, 100*time.Millisecond, 5*time.Millisecond, "a no-op add starts nothing")

	// Re-adding after the item was abandoned starts it again, as a newer generation.
	_, _, err := f.st.FailScan(context.Background(), evmWallet, "etherlink", store.ScanFailure{Error: "x", Now: time.Now(), MaxRetries: 0})
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, f.do(t, http.MethodPost, "/v1/wallets", `{"address":"`+evmWallet+`"}`).Code)
	require.Eventually(t, func() bool { return len(sig.Starts()) == 2 }, 10*time.Second, 5*time.Millisecond)
	calls := syncs(t, sig)
	assert.Equal(t, []workflows.NetworkGen{{Network: "etherlink", Gen: 1}}, calls[0].Networks)
	assert.Equal(t, []workflows.NetworkGen{{Network: "etherlink", Gen: 2}}, calls[1].Networks)
}

func TestAnAddedWalletIsHandedToTemporalAtOnceNotAtTheNextSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, d := newWalletFixture(t)
		sig := &temporalfake.Client{}
		d.Temporal, d.Policy = sig, workflows.BackfillPolicy{ScanTimeout: time.Hour}
		require.Equal(t, time.Hour, d.Sweep)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); d.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		// Run's first pass finds nothing; the add must wake it.
		synctest.Wait()
		require.Zero(t, len(sig.Starts()))

		require.Equal(t, http.StatusAccepted, f.do(t, http.MethodPost, "/v1/wallets", `{"address":"`+evmWallet+`"}`).Code)
		synctest.Wait() // Run is asleep again, and the bubble's clock has not moved towards the sweep
		assert.Len(t, syncs(t, sig), 1)
	})
}

func TestABalanceStaysReadableMarkedStaleWhileItsNetworkWaitsForARetryAndTheOthersAreRecalculated(t *testing.T) {
	f, _ := newWalletFixture(t)
	f.w.Networks = append(f.w.Networks, backfill.Network{Name: "etherlink-b", Unit: "blocks", Parse: evmscan.ParseAddress})
	ctx := context.Background()
	add := `{"address":"` + evmWallet + `","networks":["etherlink","etherlink-b"]}`
	complete := func(network string, closing int64) {
		t.Helper()
		_, err := f.st.BeginScan(ctx, evmWallet, network)
		require.NoError(t, err)
		require.NoError(t, f.st.CompleteScan(ctx, evmWallet, network, store.Holdings{
			Opening: []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(closing), Known: true}},
			Closing: []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(closing), Known: true}}}))
	}
	require.Equal(t, http.StatusAccepted, f.do(t, http.MethodPost, "/v1/wallets", add).Code)
	complete("etherlink", 1)
	complete("etherlink-b", 2)
	_, err := f.st.FinishWallet(ctx, evmWallet, backfill.FinishRules)
	require.NoError(t, err)

	// Added again: EtherLink completes, etherlink-b fails and waits.
	require.Equal(t, http.StatusAccepted, f.do(t, http.MethodPost, "/v1/wallets", add).Code)
	complete("etherlink", 3)
	_, err = f.st.BeginScan(ctx, evmWallet, "etherlink-b")
	require.NoError(t, err)
	_, _, err = f.st.FailScan(ctx, evmWallet, "etherlink-b", store.ScanFailure{Error: "node down", Now: time.Now(), MaxRetries: 5, Delay: func(int) time.Duration { return time.Hour }})
	require.NoError(t, err)
	_, err = f.st.FinishWallet(ctx, evmWallet, backfill.FinishRules)
	require.NoError(t, err)

	type balanceJSON struct {
		Network    string `json:"network"`
		Balance    string `json:"balance"`
		Reconciled *bool  `json:"reconciled"`
		Stale      bool   `json:"stale"`
		ComputedAt string `json:"computed_at"`
	}
	w := apitest.Decode[struct {
		Done       bool          `json:"done"`
		Reconciled *bool         `json:"reconciled"`
		Balances   []balanceJSON `json:"balances"`
	}](t, f.do(t, http.MethodGet, "/v1/wallets/"+evmWallet, ""))
	require.Len(t, w.Balances, 2)
	fresh, stale := w.Balances[0], w.Balances[1]
	assert.Equal(t, "etherlink", fresh.Network)
	assert.Equal(t, "3", fresh.Balance, "recalculated while the other network waits")
	assert.False(t, fresh.Stale)
	assert.NotEmpty(t, fresh.ComputedAt)
	assert.Equal(t, "etherlink-b", stale.Network)
	assert.Equal(t, "2", stale.Balance, "the last computed balance stays readable")
	assert.True(t, stale.Stale)
	computed, err := time.Parse(time.RFC3339Nano, stale.ComputedAt)
	require.NoError(t, err)
	recalculated, err := time.Parse(time.RFC3339Nano, fresh.ComputedAt)
	require.NoError(t, err)
	assert.False(t, computed.After(recalculated), "computed_at says when: before the recalculation")
	assert.False(t, w.Done, "a retry is due and a balance is stale")
	assert.Nil(t, w.Reconciled)
}

func TestADrainingNodeRefusesWalletAddsButKeepsAnsweringReads(t *testing.T) {
	f, _ := newWalletFixture(t)
	f.w.Draining = &httpapi.Drain{}
	require.Equal(t, http.StatusAccepted, f.do(t, http.MethodPost, "/v1/wallets", `{"address":"`+evmWallet+`"}`).Code)
	f.w.Draining.Start()

	rec := f.do(t, http.MethodPost, "/v1/wallets", `{"address":"`+solWallet+`"}`)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	assert.Equal(t, "5", rec.Header().Get("Retry-After"))
	assert.Equal(t, "draining", apitest.Decode[struct{ Code string }](t, rec).Code)
	_, err := f.st.WalletStatus(context.Background(), solWallet)
	require.ErrorIs(t, err, store.ErrNotFound, "nothing was stored")
	assert.Equal(t, http.StatusOK, f.do(t, http.MethodGet, "/v1/wallets/"+evmWallet, "").Code)
}

func TestWithoutABackfillNetworkTheWalletRoutesSayBackfillIsNotEnabled(t *testing.T) {
	f, _ := newWalletFixture(t)
	f.w.Networks = nil
	for _, r := range []struct{ method, path, body string }{
		{http.MethodPost, "/v1/wallets", `{"address":"` + evmWallet + `"}`},
		{http.MethodGet, "/v1/wallets/" + evmWallet, ""},
		{http.MethodGet, "/v1/wallets/" + evmWallet + "/transfers", ""},
	} {
		rec := f.do(t, r.method, r.path, r.body)
		require.Equal(t, http.StatusNotFound, rec.Code, r.path)
		e := apitest.Decode[struct{ Code, Message string }](t, rec)
		assert.Equal(t, "not_found", e.Code, r.path)
		assert.Contains(t, e.Message, "not enabled", r.path)
	}
}
