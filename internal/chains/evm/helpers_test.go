package evm_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/testkit"
)

func startChain(t *testing.T, o devchain.Options) *devchain.Chain {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
	}
	if o.BlockTime == 0 {
		o.BlockTime = 50 * time.Millisecond
	}
	if o.FinalityDepth == 0 {
		o.FinalityDepth = 3
	}
	o.AheadOfClock = true // a block every 50 ms, whatever the clock says
	c, err := devchain.Start(context.Background(), o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Stop() })
	return c
}

func devKey(t *testing.T, c *devchain.Chain) *ecdsa.PrivateKey {
	t.Helper()
	k, err := evm.LoadKey(c.KeyFile())
	require.NoError(t, err)
	return k
}

func keyHex(k *ecdsa.PrivateKey) string { return hex.EncodeToString(crypto.FromECDSA(k)) }

// newAdapter connects an adapter to the dev chain with the dev key; logs go to the returned buffer.
func newAdapter(t *testing.T, c *devchain.Chain, mutate func(*evm.Config)) (*evm.Adapter, *testkit.SyncBuffer) {
	t.Helper()
	logs := &testkit.SyncBuffer{}
	cfg := evm.Config{
		RPCURL:       c.URL(),
		Key:          devKey(t, c),
		ChainID:      devchain.DefaultChainID,
		PollInterval: 20 * time.Millisecond,
		Logger:       slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	a, err := evm.New(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(a.Close)
	return a, logs
}

// waitBlocks waits until the chain behind ec has made n more blocks.
func waitBlocks(t *testing.T, ec *ethclient.Client, n uint64) {
	t.Helper()
	from, err := ec.BlockNumber(context.Background())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		head, err := ec.BlockNumber(context.Background())
		return err == nil && head >= from+n
	}, 30*time.Second, 10*time.Millisecond, "%d blocks after block %d", n, from)
}

func client(t *testing.T, url string) *ethclient.Client {
	t.Helper()
	rc, err := rpc.Dial(url)
	require.NoError(t, err)
	t.Cleanup(rc.Close)
	return ethclient.NewClient(rc)
}

func randomRoot(t *testing.T) [32]byte {
	t.Helper()
	var r [32]byte
	_, err := rand.Read(r[:])
	require.NoError(t, err)
	return r
}

// waitState polls Status (as ConfirmAnchor does) until it reports want.
func waitState(t *testing.T, a *evm.Adapter, j chains.Journal, batchID int64, want chains.State, within time.Duration) chains.Status {
	t.Helper()
	return waitFor(t, a, j, batchID, func(st chains.Status) bool { return st.State == want }, fmt.Sprint(want), within)
}

// waitFor polls Status until ok accepts it; Failed ends the wait. Each
// Status waits for the adapter's next status round, which paces the polling.
func waitFor(t *testing.T, a *evm.Adapter, j chains.Journal, batchID int64, ok func(chains.Status) bool, what string, within time.Duration) chains.Status {
	t.Helper()
	deadline := time.Now().Add(within)
	var last chains.Status
	for time.Now().Before(deadline) {
		st, err := a.Status(context.Background(), batchID, j)
		require.NoError(t, err)
		if ok(st) {
			return st
		}
		require.NotEqual(t, chains.Failed, st.State, "batch %d failed: %s", batchID, st.Detail)
		last = st
	}
	t.Fatalf("batch %d: not %s within %s; last status %+v", batchID, what, within, last)
	return last
}

func mustKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	k, err := crypto.GenerateKey()
	require.NoError(t, err)
	return k
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }

func decodeTx(t *testing.T, raw []byte) *types.Transaction {
	t.Helper()
	tx := new(types.Transaction)
	require.NoError(t, tx.UnmarshalBinary(raw))
	return tx
}

func latestNonce(t *testing.T, ec *ethclient.Client, addr common.Address) uint64 {
	t.Helper()
	n, err := ec.NonceAt(context.Background(), addr, nil)
	require.NoError(t, err)
	return n
}

func atLeastTenPercentMore(newV, oldV *big.Int) bool {
	limit := new(big.Int).Mul(oldV, big.NewInt(110))
	return new(big.Int).Mul(newV, big.NewInt(100)).Cmp(limit) >= 0 && newV.Cmp(oldV) > 0
}
