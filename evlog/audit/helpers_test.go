package audit_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/audit"
	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/chains/solana"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/receipt"
)

const testOrigin = "keeper.test/log"

// The chains every test shares: a go-ethereum dev chain and the Solana
// devnet, both speaking real JSON-RPC. Each test anchors from accounts of
// its own, so one test's anchors are not another's.
var (
	evmChain *devchain.Chain
	solChain *devnet.Devnet
	evmKeys  []*ecdsa.PrivateKey // funded at genesis
	nextKey  atomic.Int32
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "audit-test-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	var fund []common.Address
	for range 24 {
		k, err := crypto.GenerateKey()
		if err != nil {
			panic(err)
		}
		evmKeys = append(evmKeys, k)
		fund = append(fund, crypto.PubkeyToAddress(k.PublicKey))
	}
	evmChain, err = devchain.Start(ctx, devchain.Options{Dir: dir, BlockTime: 50 * time.Millisecond, FinalityDepth: 2, Fund: fund, AheadOfClock: true})
	if err != nil {
		panic(err)
	}
	defer evmChain.Stop()
	solChain, err = devnet.Start(ctx, devnet.Options{SlotTime: 10 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	defer solChain.Stop()
	return m.Run()
}

// fixture is a keeper log on a real SQLite store with its anchoring
// accounts on both chains.
type fixture struct {
	st      *store.Store
	signer  *evlog.Signer
	seq     *logsvc.Sequencer
	chains  map[string]chains.Adapter
	journal *chaintest.Journal
	batch   atomic.Int64 // batch ids of anchors sent outside the store
	payer   sol.PrivateKey
}

var bothChains = []string{"etherlink", "solana"}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	ctx := context.Background()
	st := storetest.SQLite(t)
	skey, _, err := evlog.GenerateKey(testOrigin)
	require.NoError(t, err)
	signer, err := evlog.NewSigner(skey, testOrigin)
	require.NoError(t, err)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	i := int(nextKey.Add(1)) - 1
	require.Less(t, i, len(evmKeys), "more tests than funded EVM keys")
	ea, err := evm.New(ctx, evm.Config{RPCURL: evmChain.URL(), Key: evmKeys[i], ChainID: devchain.DefaultChainID,
		PollInterval: 20 * time.Millisecond, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(ea.Close)
	payer, err := solChain.NewFundedKey(10 * devnet.LamportsPerSOL)
	require.NoError(t, err)
	sa, err := solana.New(solana.Config{RPCURL: solChain.URL(), Payer: payer, PollInterval: 20 * time.Millisecond,
		RebroadcastInterval: 100 * time.Millisecond, RPCTimeout: 5 * time.Second, Logger: quiet})
	require.NoError(t, err)
	t.Cleanup(sa.Close)

	f := &fixture{st: st, signer: signer, seq: &logsvc.Sequencer{Store: st, Signer: signer, Interval: time.Second, Logger: quiet},
		chains: map[string]chains.Adapter{"etherlink": ea, "solana": sa}, journal: chaintest.NewJournal(), payer: payer}
	f.batch.Store(1 << 40)
	return f
}

// grow adds n evidence for both chains, takes them into the log and signs
// a checkpoint.
func (f *fixture) grow(t *testing.T, n int) store.LogCheckpoint {
	t.Helper()
	nes := make([]store.NewEvidence, n)
	for i := range nes {
		_, err := rand.Read(nes[i].Digest[:])
		require.NoError(t, err)
		nes[i].Chains, nes[i].Priority = bothChains, 5
	}
	ins, err := f.st.InsertEvidenceBatch(context.Background(), nes)
	require.NoError(t, err)
	for _, in := range ins {
		require.NoError(t, in.Err)
	}
	c, err := f.seq.Sync(context.Background())
	require.NoError(t, err)
	return c
}

// anchor commits the evidence waiting for chain to the latest checkpoint,
// as AnchorBatch does: a batch in the store, its transaction sent by the
// chain's adapter, and the batch confirmed once the transaction is final.
// It returns the transaction.
func (f *fixture) anchor(t *testing.T, chain string) string {
	t.Helper()
	ctx := context.Background()
	cp, err := f.st.LatestCheckpoint(ctx)
	require.NoError(t, err)
	b, ok, err := f.st.FormBatch(ctx, chain, 100_000)
	require.NoError(t, err)
	require.True(t, ok, "no evidence waits for %s", chain)
	_, err = f.st.BatchCheckpoint(ctx, b.ID, cp.Size)
	require.NoError(t, err)
	ref := receipt.CheckpointRef{KeyHash: f.signer.Key().Hash, Size: cp.Size, Root: cp.Root}
	tx, st := f.send(t, chain, b.ID, ref)
	require.NoError(t, f.st.MarkSubmitted(ctx, b.ID, cp.Root, tx))
	network, err := chains.NetworkOf(ctx, f.chains[chain])
	require.NoError(t, err)
	require.NoError(t, f.st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: st.Ref, Block: st.Block, BlockTime: st.BlockTime,
		Network: network, BlockHash: st.BlockHash, Finality: st.Finality, Account: chains.AccountOf(f.chains[chain])}))
	return st.Ref
}

// sendUnlisted anchors ref outside the store (as a keeper that does not
// list it would) and waits until it is final. On Solana the transaction is
// built here with a fresh blockhash: the adapter, given the memo it sent
// moments ago, would send the very same transaction again.
func (f *fixture) sendUnlisted(t *testing.T, chain string, ref receipt.CheckpointRef) string {
	t.Helper()
	if chain != "solana" {
		tx, _ := f.send(t, chain, f.batch.Add(1), ref)
		return tx
	}
	return f.sendMemo(t, receipt.SolanaCheckpointMemo(ref))
}

// sendMemo sends memo in a transaction the fixture's Solana account pays
// and signs, and waits until it is final.
func (f *fixture) sendMemo(t *testing.T, memo string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := rpc.New(solChain.URL())
	defer c.Close()
	bh, err := c.GetLatestBlockhash(ctx, rpc.CommitmentFinalized)
	require.NoError(t, err)
	_, raw, err := solana.BuildAnchorTx(f.payer, memo, bh.Value.Blockhash, 0)
	require.NoError(t, err)
	sig, err := c.SendRawTransaction(ctx, raw)
	require.NoError(t, err)
	for {
		st, err := c.GetSignatureStatuses(ctx, false, sig)
		require.NoError(t, err)
		if v := st.Value[0]; v != nil && v.ConfirmationStatus == rpc.ConfirmationStatusFinalized {
			require.Nil(t, v.Err)
			return sig.String()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("solana: %s not final in time", sig)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (f *fixture) send(t *testing.T, chain string, batchID int64, ref receipt.CheckpointRef) (string, chains.Status) {
	t.Helper()
	return f.submit(t, chain, chains.Anchor{BatchID: batchID, Root: ref.Root, Checkpoint: &ref})
}

// submit sends an anchor with the chain's adapter, as keeper does, and
// waits until it is final.
func (f *fixture) submit(t *testing.T, chain string, an chains.Anchor) (string, chains.Status) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := f.chains[chain]
	batchID := an.BatchID
	tx, err := a.Submit(ctx, an, f.journal)
	require.NoError(t, err)
	for {
		st, err := a.Status(ctx, batchID, f.journal)
		require.NoError(t, err)
		if st.State == chains.Final {
			return tx, st
		}
		require.Equal(t, chains.Pending, st.State, "%s batch %d: %s", chain, batchID, st.Detail)
		select {
		case <-ctx.Done():
			t.Fatalf("%s batch %d not final in time", chain, batchID)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// serve serves the log from the store as keeper does, and returns its URL.
func (f *fixture) serve(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(logsvc.Handler(f.st))
	t.Cleanup(srv.Close)
	return srv.URL + "/log"
}

// export writes the log to a new directory and returns it.
func (f *fixture) export(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	_, err := logsvc.Export(context.Background(), f.st, dir)
	require.NoError(t, err)
	return dir
}

// serveDir serves a directory with the standard library's file server.
func serveDir(t *testing.T, dir string) string {
	t.Helper()
	srv := httptest.NewServer(http.StripPrefix("/log/", http.FileServer(http.Dir(dir))))
	t.Cleanup(srv.Close)
	return srv.URL + "/log/"
}

// audit runs the monitor on the log at location with the log's key pinned
// and both chains.
func (f *fixture) audit(t *testing.T, location string, mutate ...func(*audit.Options)) *audit.Report {
	t.Helper()
	c, err := evlog.NewClient(location, nil)
	require.NoError(t, err)
	key := f.signer.Key()
	o := audit.Options{Log: c, Key: &key, Chains: []audit.Chain{
		{Name: "etherlink", RPC: evmChain.URL()},
		{Name: "solana", RPC: solChain.URL()},
	}}
	for _, m := range mutate {
		m(&o)
	}
	r, err := audit.Run(context.Background(), o)
	require.NoError(t, err)
	return r
}

// kinds lists the findings' kinds, with each finding for failure messages.
func kinds(r *audit.Report) ([]string, string) {
	var ks []string
	var all string
	for _, f := range r.Findings {
		ks = append(ks, f.Kind)
		all += fmt.Sprintln(f)
	}
	return ks, all
}

// copyDir copies an exported log so a test can plant a fork in it.
func copyDir(t *testing.T, from string) string {
	t.Helper()
	to := t.TempDir()
	require.NoError(t, os.CopyFS(to, os.DirFS(from)))
	return to
}
