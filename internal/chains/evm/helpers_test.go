package evm_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/big"
	"os"
	"slices"
	"sync"
	"sync/atomic"
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
)

// memJournal is a store-free chains.Journal.
type memJournal struct {
	mu    sync.Mutex
	recs  map[int64][]chains.TxRecord
	reads atomic.Int64
	// afterSave runs after a record is saved, before SaveTransaction returns.
	afterSave func(chains.TxRecord)
}

func newJournal() *memJournal { return &memJournal{recs: map[int64][]chains.TxRecord{}} }

func (j *memJournal) Transactions(_ context.Context, batchID int64) ([]chains.TxRecord, error) {
	j.reads.Add(1)
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.recs[batchID]), nil
}

func (j *memJournal) SaveTransaction(_ context.Context, rec chains.TxRecord) error {
	j.mu.Lock()
	j.recs[rec.BatchID] = append(j.recs[rec.BatchID], rec)
	hook := j.afterSave
	j.mu.Unlock()
	if hook != nil {
		hook(rec)
	}
	return nil
}

// Unconfirmed lists every batch's records on chain, oldest first: the fake
// knows nothing of confirmation, and the adapter only uses nonces the node has
// not mined.
func (j *memJournal) Unconfirmed(_ context.Context, chain string) ([]chains.TxRecord, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []chains.TxRecord
	for _, recs := range j.recs {
		for _, r := range recs {
			if r.Chain == chain {
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b chains.TxRecord) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func (j *memJournal) records(batchID int64) []chains.TxRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.recs[batchID])
}

// logBuffer collects every log line the adapter writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

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
func newAdapter(t *testing.T, c *devchain.Chain, mutate func(*evm.Config)) (*evm.Adapter, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
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

// waitFor polls Status until ok accepts it; Failed ends the wait.
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
		time.Sleep(5 * time.Millisecond)
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
