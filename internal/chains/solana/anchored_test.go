package solana

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/programs/system"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/receipt"
)

// dustMemo is the memo a third party writes to pass for a keeper anchor:
// the log's key hash (public: receipts and /log/key carry it), a huge size
// and any root.
func dustMemo(keyHash uint32, size uint64) string {
	return receipt.SolanaCheckpointMemoForBatch(receipt.CheckpointRef{KeyHash: keyHash, Size: size, Root: rootOf("any root")}, 900000)
}

// sendDust sends one 1-lamport transfer to the payer per memo, paid and
// signed by from and carrying the memo ("" for none), over JSON-RPC, and
// waits until every one is confirmed.
func sendDust(t *testing.T, url string, from sol.PrivateKey, payer sol.PublicKey, memos []string) {
	t.Helper()
	ctx := context.Background()
	client := rpc.New(url)
	bh, err := client.GetLatestBlockhash(ctx, rpc.CommitmentConfirmed)
	require.NoError(t, err)
	sigs := make([]sol.Signature, 0, len(memos))
	for i, memo := range memos {
		ixs := []sol.Instruction{system.NewTransferInstruction(uint64(1+i), from.PublicKey(), payer).Build()}
		if memo != "" {
			ixs = append(ixs, sol.NewInstruction(MemoProgramID, sol.AccountMetaSlice{sol.Meta(from.PublicKey()).SIGNER()}, []byte(memo)))
		}
		tx, err := sol.NewTransaction(ixs, bh.Value.Blockhash, sol.TransactionPayer(from.PublicKey()))
		require.NoError(t, err)
		_, err = tx.Sign(func(sol.PublicKey) *sol.PrivateKey { return &from })
		require.NoError(t, err)
		sig, err := client.SendTransactionWithOpts(ctx, tx, rpc.TransactionOpts{SkipPreflight: true})
		require.NoError(t, err)
		sigs = append(sigs, sig)
	}
	require.Eventually(t, func() bool {
		for start := 0; start < len(sigs); start += MaxSignaturesPerCall {
			st, err := client.GetSignatureStatuses(ctx, false, sigs[start:min(start+MaxSignaturesPerCall, len(sigs))]...)
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
	}, 2*time.Minute, 20*time.Millisecond, "the dust transactions are confirmed") // 200 of them, on a devnet slowed by the race detector in CI
}

// anchorCheckpoint anchors c as batch id with a and waits until it is final.
func anchorCheckpoint(t *testing.T, a *Adapter, j *chaintest.Journal, id int64, c receipt.CheckpointRef) {
	t.Helper()
	_, err := a.Submit(context.Background(), chains.Anchor{BatchID: id, Root: c.Root, Checkpoint: &c}, j)
	require.NoError(t, err)
	st := waitFor(t, a, id, j, 20*time.Second)
	require.Equal(t, chains.Final, st.State, st.Detail)
}

func latest(t *testing.T, a *Adapter) []receipt.CheckpointRef {
	t.Helper()
	refs, err := a.LatestCheckpoints(context.Background())
	require.NoError(t, err)
	return refs
}

// TestOnlyThePayersOwnAnchorIsReadBackWhateverOthersSendIt: a transfer to
// the payer whose memo claims a checkpoint of a billion entries is not
// keeper's anchor, and 200 of them (more than a page of signatures) do not
// hide keeper's own: the read-back pages back past them.
func TestOnlyThePayersOwnAnchorIsReadBackWhateverOthersSendIt(t *testing.T) {
	chain, payer := startDevnet(t, 20*time.Millisecond) // a blockhash lives 150 slots: 3 s, time enough for a submit under the race detector
	a := newAdapter(t, chain.URL(), payer)
	a.sigPage = 64 // a few pages for 200 transactions, as 1,000 per page does for more
	j := chaintest.NewJournal()
	const key = 0x1234abcd
	attacker, err := chain.NewFundedKey(devnet.LamportsPerSOL)
	require.NoError(t, err)

	assert.Empty(t, latest(t, a), "nothing anchored yet")
	sendDust(t, chain.URL(), attacker, payer.PublicKey(), []string{dustMemo(key, 1_000_000_000)})
	assert.Empty(t, latest(t, a), "another account's memo is not an anchor of the payer's")

	own := receipt.CheckpointRef{KeyHash: key, Size: 122, Root: rootOf("122 entries")}
	anchorCheckpoint(t, a, j, 1, own)
	assert.Equal(t, []receipt.CheckpointRef{own}, latest(t, a))

	sendDust(t, chain.URL(), attacker, payer.PublicKey(), []string{dustMemo(key, 1_000_000_000)})
	assert.Equal(t, []receipt.CheckpointRef{own}, latest(t, a), "one dust memo after keeper's anchor")

	memos := make([]string, 200)
	for i := range memos {
		memos[i] = dustMemo(key, 1_000_000_000+uint64(i))
		if i%4 == 0 {
			memos[i] = "" // plain transfers too
		}
	}
	sendDust(t, chain.URL(), attacker, payer.PublicKey(), memos)
	chain.ResetCalls()
	assert.Equal(t, []receipt.CheckpointRef{own}, latest(t, a), "keeper's anchor behind 200 dust transactions")
	assert.LessOrEqual(t, chain.Calls("getTransaction"), 151+DefaultRPCConnections,
		"only transactions whose memo claims a checkpoint are fetched (151 of the 201 that follow keeper's anchor, a round of fetches at most beyond it)")

	next := receipt.CheckpointRef{KeyHash: key, Size: 130, Root: rootOf("130 entries")}
	anchorCheckpoint(t, a, j, 2, next)
	assert.Equal(t, []receipt.CheckpointRef{next}, latest(t, a), "the payer's latest anchor")
}

// TestAnAnchorOlderThanTheLookbackIsNotReadBack: the read-back's bound is in
// slots, whatever the number of transactions within them.
func TestAnAnchorOlderThanTheLookbackIsNotReadBack(t *testing.T) {
	chain, payer := startDevnet(t, 20*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer, func(c *Config) { c.AnchorLookbackSlots = 500 })
	own := receipt.CheckpointRef{KeyHash: 7, Size: 3, Root: rootOf("3 entries")}
	anchorCheckpoint(t, a, chaintest.NewJournal(), 1, own)
	require.Equal(t, []receipt.CheckpointRef{own}, latest(t, a), "within the bound")

	chain.Advance(600)
	assert.Empty(t, latest(t, a), "600 slots later")
}

// forgingNode forwards JSON-RPC to a node, except that its getTransaction
// answer for one signature carries another transaction: one whose fee
// payer and memo are keeper's, under that signature, which does not verify.
func forgingNode(t *testing.T, target string, sig sol.Signature, forged []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		resp, err := http.Post(target, "application/json", bytes.NewReader(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		out, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		var req struct {
			Method string `json:"method"`
			Params []any  `json:"params"`
		}
		if json.Unmarshal(body, &req) == nil && req.Method == "getTransaction" && len(req.Params) > 0 && req.Params[0] == sig.String() {
			var answer map[string]any
			require.NoError(t, json.Unmarshal(out, &answer))
			answer["result"].(map[string]any)["transaction"] = []string{base64.StdEncoding.EncodeToString(forged), "base64"}
			out, err = json.Marshal(answer)
			require.NoError(t, err)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestATransactionWhoseSignaturesDoNotVerifyIsNoAnchorWhateverTheNodeSays:
// a node (or a proxy before it) that answers a third party's dust with a
// transaction naming keeper's payer as fee payer and signer, under the
// dust's signature, is not believed: the signatures do not verify.
func TestATransactionWhoseSignaturesDoNotVerifyIsNoAnchorWhateverTheNodeSays(t *testing.T) {
	chain, payer := startDevnet(t, 20*time.Millisecond)
	attacker, err := chain.NewFundedKey(devnet.LamportsPerSOL)
	require.NoError(t, err)
	memo := dustMemo(0x1234abcd, 1_000_000_000)
	sendDust(t, chain.URL(), attacker, payer.PublicKey(), []string{memo})

	client := rpc.New(chain.URL())
	limit := 1
	listed, err := client.GetSignaturesForAddressWithOpts(context.Background(), payer.PublicKey(), &rpc.GetSignaturesForAddressOpts{Limit: &limit, Commitment: rpc.CommitmentConfirmed})
	require.NoError(t, err)
	require.Len(t, listed, 1)
	forged, err := sol.NewTransaction([]sol.Instruction{
		sol.NewInstruction(MemoProgramID, sol.AccountMetaSlice{sol.Meta(payer.PublicKey()).SIGNER()}, []byte(memo)),
	}, sol.Hash{1}, sol.TransactionPayer(payer.PublicKey()))
	require.NoError(t, err)
	forged.Signatures = []sol.Signature{listed[0].Signature}
	raw, err := forged.MarshalBinary()
	require.NoError(t, err)

	a := newAdapter(t, forgingNode(t, chain.URL(), listed[0].Signature, raw), payer)
	assert.Empty(t, latest(t, a))
}
