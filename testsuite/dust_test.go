package testsuite

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/solana"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/dev/localnet"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/receipt"
)

// TestDustToTheSolanaPayerNeitherStopsAWorkerNorHidesItsAnchorFromTheLostStoreGuard:
// a third party sends keeper's Solana fee payer a 1-lamport transfer whose
// memo claims a checkpoint of a billion entries of keeper's log (its key
// hash is public), and later 200 of them. After each, keeper restarted on
// its store is ready and every new evidence confirms; a worker on a backup
// of the store from before is still refused, keeper's own anchor of the
// bigger tree being found behind the dust.
func TestDustToTheSolanaPayerNeitherStopsAWorkerNorHidesItsAnchorFromTheLostStoreGuard(t *testing.T) {
	endToEnd(t)
	ctx := context.Background()
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	cfg.Chains = []string{"solana"}
	cfg.Dev.SolanaPort, cfg.Dev.SolanaSlotTime = 0, 25*time.Millisecond
	cfg.ConfirmPoll = 100 * time.Millisecond
	net, err := localnet.StartFor(ctx, &cfg, testLogger(t))
	require.NoError(t, err)
	t.Cleanup(net.Stop)
	adapters := func() map[string]chains.Adapter {
		chs, err := node.NewChains(ctx, cfg, nil, testLogger(t))
		require.NoError(t, err)
		return chs
	}
	signer, _, err := node.LogSigner(cfg)
	require.NoError(t, err)
	attacker, err := net.Solana.NewFundedKey(devnet.LamportsPerSOL)
	require.NoError(t, err)
	hc := &http.Client{Timeout: 10 * time.Second}
	st := openStore(t, dir)
	confirmed := 0
	// run starts keeper on the store, checks it is ready and that three new
	// evidence confirm, and stops it.
	run := func(what string) {
		t.Helper()
		chs := adapters()
		n := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, st, chs)
		ready, checks := readyz(t, n.APIAddr())
		require.True(t, ready, "%s: %v", what, checks)
		for i := range 3 {
			code, _, err := post(hc, n.APIAddr(), map[string]any{"digest": digest(t.Name(), confirmed+i), "chains": []string{"solana"}})
			require.NoError(t, err)
			require.Equal(t, http.StatusAccepted, code, what)
		}
		confirmed += 3
		waitConfirmed(t, st, confirmed, 2*time.Minute)
		n.Kill()
		closeAll(chs)
	}
	chs := adapters()
	payer := chs[solana.Name].(*solana.Adapter).Payer()
	closeAll(chs)

	run("first start")
	backup := filepath.Join(t.TempDir(), "data")
	copyStoreFiles(t, node.StoreFile(dir), node.StoreFile(backup))
	run("second start")

	sendDustTo(t, cfg.Solana.RPCURL, attacker, payer, 1, signer.Key().Hash)
	run("after one dust memo")
	sendDustTo(t, cfg.Solana.RPCURL, attacker, payer, 200, signer.Key().Hash)
	run("after 200 dust memos")

	rewound := openStore(t, backup)
	bcfg := cfg
	bcfg.DataDir = backup
	bcfg.Log.KeyFile = cfg.LogKeyFileOrDefault() // the deployment's log key
	require.NoError(t, os.MkdirAll(backup, 0o700))
	chs = adapters()
	t.Cleanup(func() { closeAll(chs) })
	w := startNode(t, srv, bcfg, node.Roles{Worker: true}, rewound, chs)
	require.Eventually(t, func() bool {
		_, checks := readyz(t, w.HealthAddr())
		return strings.Contains(checks["log"], "a chain holds a checkpoint of")
	}, 30*time.Second, 100*time.Millisecond, "the rewound store is refused")
	ready, checks := readyz(t, w.HealthAddr())
	assert.False(t, ready)
	assert.Contains(t, checks["log"], "and this store's log has 3: the store was lost or restored from an older backup; restore the newest one")
	assert.NotContains(t, checks["log"], "1000000", "keeper's own anchor, not a dust memo's claim")
}

// closeAll closes the adapters that hold connections or pollers.
func closeAll(chs map[string]chains.Adapter) {
	for _, a := range chs {
		if c, ok := a.(interface{ Close() }); ok {
			c.Close()
		}
	}
}

// copyStoreFiles copies a SQLite store nobody writes to (its file and the
// files SQLite keeps beside it): a backup.
func copyStoreFiles(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(filepath.Dir(to), 0o700))
	matches, err := filepath.Glob(from + "*")
	require.NoError(t, err)
	for _, m := range matches {
		b, err := os.ReadFile(m)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(to+strings.TrimPrefix(m, from), b, 0o600))
	}
}

// sendDustTo sends n 1-lamport transfers from from to payer over JSON-RPC,
// each with a memo claiming a checkpoint of more than a billion entries of
// the log whose key hash is keyHash, and waits until they are confirmed.
func sendDustTo(t *testing.T, url string, from sol.PrivateKey, payer sol.PublicKey, n int, keyHash uint32) {
	t.Helper()
	ctx := context.Background()
	client := rpc.New(url)
	bh, err := client.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	sigs := make([]sol.Signature, n)
	for i := range sigs {
		claim := receipt.CheckpointRef{KeyHash: keyHash, Size: 1_000_000_000 + uint64(i), Root: [32]byte{byte(i)}}
		tx, err := sol.NewTransaction([]sol.Instruction{
			system.NewTransferInstruction(1, from.PublicKey(), payer).Build(),
			sol.NewInstruction(solana.MemoProgramID, sol.AccountMetaSlice{sol.Meta(from.PublicKey()).SIGNER()},
				[]byte(receipt.SolanaCheckpointMemoForBatch(claim, 900000))),
		}, bh.Value.Blockhash, sol.TransactionPayer(from.PublicKey()))
		require.NoError(t, err)
		_, err = tx.Sign(func(sol.PublicKey) *sol.PrivateKey { return &from })
		require.NoError(t, err)
		sigs[i], err = client.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{SkipPreflight: true})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool {
		for start := 0; start < n; start += solana.MaxSignaturesPerCall {
			st, err := client.GetSignatureStatuses(ctx, false, sigs[start:min(start+solana.MaxSignaturesPerCall, n)]...)
			if err != nil {
				return false
			}
			for _, s := range st.Value {
				if s == nil || s.Err != nil || s.ConfirmationStatus == rpc.ConfirmationStatusProcessed {
					return false
				}
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "the dust transactions are confirmed")
}
