//go:build crash

package testsuite

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	sol "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/dev/localnet"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/receipt/verify"
)

// crashRNG is the crash tests' random source: seeded from the clock, or from
// KEEPER_CRASH_SEED to replay a run; the seed is logged.
func crashRNG(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KEEPER_CRASH_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (replay with KEEPER_CRASH_SEED=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// crashEnv is the environment the crash tests run keeper with: the data
// directory, both chains, the dev Temporal server's port, the API address,
// and short timings so restarts are noticed and work resumes quickly.
func crashEnv(dir string, temporalPort int, apiAddr string) []string {
	return []string{
		"KEEPER_DATA_DIR=" + dir, "KEEPER_LOG_LEVEL=warn", "KEEPER_CHAINS=etherlink,solana",
		fmt.Sprintf("KEEPER_DEV_TEMPORAL_PORT=%d", temporalPort), "KEEPER_DEV_UI_PORT=0", "KEEPER_HTTP_ADDR=" + apiAddr,
		"KEEPER_CONFIRM_POLL_MS=200", "KEEPER_POLL_MS=500", "KEEPER_ANCHOR_INTERVAL=500ms", "KEEPER_RETRY_BASE_MS=200", "KEEPER_RETRY_CAP_MS=2000",
		"KEEPER_RETRY_JITTER_MS=100", "KEEPER_SUBMIT_TIMEOUT=10s", "KEEPER_EVM_RESUBMIT_MS=5000", "KEEPER_DRAIN_TIMEOUT=1s",
	}
}

// crashCheck is what the crash tests check after the last restart.
type crashCheck struct {
	st                   *store.Store
	dataDir              string
	apiAddr              string
	evmURL, solURL       string
	solanaLedgerRestarts bool // the Solana devnet began again at genesis since anchors confirmed (keeper dev)
}

type crashCheckResult struct {
	longest             time.Duration
	evmTxs, solanaTxs   int
	solanaPreviousLedgr int // Solana transactions confirmed on a ledger gone with a restart (checked through the store)
}

// verifyExactlyOnce checks every accepted evidence: confirmed, its receipt's
// proofs hold, each anchor transaction carries one root and each batch one
// transaction; on chain: every anchor transaction verifies (found, succeeded,
// final, the receipt's root), the EVM signer's nonce counts exactly the
// confirmed anchor transactions (no doubles, no gaps), and per Solana batch
// exactly one of its journaled signatures landed.
func (c crashCheck) verifyExactlyOnce(t *testing.T, ids []string) crashCheckResult {
	t.Helper()
	ctx := context.Background()
	var res crashCheckResult
	txRoots := map[string]string{} // chain/tx -> root
	batchTx := map[int64]string{}
	for _, id := range ids {
		ev, err := c.st.GetEvidence(ctx, id)
		require.NoError(t, err)
		require.Equal(t, store.StatusConfirmed, ev.Status)
		res.longest = max(res.longest, ev.UpdatedAt.Sub(ev.CreatedAt))
		r := receiptFor(t, c.apiAddr, id)
		for _, a := range r.Anchors {
			require.NoError(t, r.CheckProof(a), id)
			key := a.Chain + "/" + a.TxRef
			if prev, ok := txRoots[key]; ok {
				require.Equal(t, prev, a.Root, "one transaction, one root")
			}
			txRoots[key] = a.Root
		}
		for _, a := range ev.Anchors {
			if prev, ok := batchTx[a.BatchID]; ok {
				require.Equal(t, prev, a.TxRef, "batch %d confirmed with two transactions", a.BatchID)
			}
			batchTx[a.BatchID] = a.TxRef
		}
	}

	// Solana: per batch, exactly one of its journaled signatures landed. On
	// a devnet that began again at genesis, a batch confirmed before its
	// last restart has none of its signatures on the current ledger: its
	// receipt cannot be checked on chain any more, only through the store
	// (one confirmed transaction per batch, checked above).
	sc := solrpc.New(c.solURL)
	previousLedger := map[string]bool{}
	for batchID, tx := range batchTx {
		recs, err := c.st.Transactions(ctx, batchID)
		require.NoError(t, err)
		if len(recs) == 0 || recs[0].Chain != "solana" {
			continue
		}
		var sigs []sol.Signature
		for _, r := range recs {
			sigs = append(sigs, sol.MustSignatureFromBase58(r.Ref))
		}
		st, err := sc.GetSignatureStatuses(ctx, true, sigs...)
		require.NoError(t, err)
		landed := 0
		for _, s := range st.Value {
			if s != nil {
				landed++
			}
		}
		if landed == 0 && c.solanaLedgerRestarts {
			previousLedger[tx] = true
			continue
		}
		assert.Equal(t, 1, landed, "solana batch %d (%s): one signature landed", batchID, tx)
	}

	for key, root := range txRoots {
		chain, ref, _ := strings.Cut(key, "/")
		var got [32]byte
		var ok bool
		switch chain {
		case "etherlink":
			res.evmTxs++
			v, err := verify.EVM(ctx, c.evmURL, ref)
			require.NoError(t, err)
			got, ok = v.Root, v.Found && v.Succeeded && v.Final
		case "solana":
			res.solanaTxs++
			if previousLedger[ref] {
				res.solanaPreviousLedgr++
				continue
			}
			v, err := verify.Solana(ctx, c.solURL, ref)
			require.NoError(t, err)
			got, ok = v.Root, v.Found && v.Succeeded && v.Final
		}
		require.True(t, ok, "%s verifies on chain", key)
		require.Equal(t, root, fmt.Sprintf("%x", got), key)
	}

	c.verifyLog(t, ids)

	// EVM: the signer's nonce counts exactly the confirmed anchor transactions.
	keyHex, err := os.ReadFile(localnet.EVMKeyFile(c.dataDir))
	require.NoError(t, err)
	k, err := crypto.HexToECDSA(strings.TrimPrefix(strings.TrimSpace(string(keyHex)), "0x"))
	require.NoError(t, err)
	ec, err := ethclient.Dial(c.evmURL)
	require.NoError(t, err)
	defer ec.Close()
	nonce, err := ec.NonceAt(ctx, crypto.PubkeyToAddress(k.PublicKey), nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(res.evmTxs), nonce, "no EVM transaction beyond one per confirmed batch (no doubles, no gaps)")
	return res
}

// verifyLog checks the evidence log after the crashes: every accepted
// evidence is in it exactly once, as its salted commitment; and every
// checkpoint signed across every restart is signed by the log's one key and
// is a prefix of the final log (its root is the final tree's root at its
// size), so no restart forked or rewrote the log.
func (c crashCheck) verifyLog(t *testing.T, ids []string) {
	t.Helper()
	ctx := context.Background()
	size, err := c.st.LogSize(ctx)
	require.NoError(t, err)
	require.GreaterOrEqual(t, size, uint64(len(ids)), "every accepted evidence is in the log")
	entries, err := c.st.LogEntries(ctx, 0, size)
	require.NoError(t, err)
	at := map[[32]byte]uint64{}
	for i, e := range entries {
		prev, dup := at[e]
		require.False(t, dup, "entry at %d and %d is one commitment", prev, i)
		at[e] = uint64(i)
	}
	for _, id := range ids {
		ev, err := c.st.GetEvidence(ctx, id)
		require.NoError(t, err)
		idx, ok, err := c.st.LogIndexOf(ctx, id)
		require.NoError(t, err)
		require.True(t, ok, "%s is in the log", id)
		require.Equal(t, evlog.EntryOf(ev.Salt, ev.Digest), entries[idx], "%s's entry", id)
	}
	vkey, err := c.st.LogKey(ctx)
	require.NoError(t, err)
	key, err := evlog.ParseKey(vkey)
	require.NoError(t, err)
	cps, err := c.st.Checkpoints(ctx)
	require.NoError(t, err)
	require.NotEmpty(t, cps)
	hr := c.st.LogHashReader(ctx)
	for _, cp := range cps {
		body, err := key.Open(cp.Note)
		require.NoError(t, err, "checkpoint %d", cp.Size)
		require.Equal(t, cp.Size, body.Size)
		require.Equal(t, cp.Root, body.Root)
		h, err := tlog.TreeHash(int64(cp.Size), hr)
		require.NoError(t, err)
		require.Equal(t, tlog.Hash(cp.Root), h, "checkpoint %d is a prefix of the final log", cp.Size)
	}
	t.Logf("log: %d entries, %d checkpoints signed across the restarts, all prefixes of the final log", size, len(cps))
}
