package evm_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/params"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/rpcfault"
	"github.com/keeperhq/keeper/receipt"
)

// failNextBroadcast makes the node's proxy answer every request with a
// JSON-RPC error from the moment the next transaction is journaled: its
// broadcast fails without a word on whether the node took it. The caller
// clears the faults.
func failNextBroadcast(j *chaintest.Journal, p *rpcfault.Proxy) {
	var once sync.Once
	j.SetAfterSave(func(chains.TxRecord) error {
		once.Do(func() { p.SetFaults(rpcfault.Faults{ErrorRate: 1}) })
		return nil
	})
}

// Two batches that commit to one checkpoint carry the same calldata. The
// first one's broadcast failed and keeper restarted before the second was
// signed: at the same price the second would sign the first's very bytes on
// the nonce the node still reports free, and one transaction would stand
// for both batches.
func TestTwoBatchesOnOneCheckpointNeverShareATransactionAfterABroadcastFailedAndARestart(t *testing.T) {
	c := startChain(t, devchain.Options{})
	p, _ := behindEtherLinkFees(t, c, params.GWei) // a fixed price: both batches are priced alike
	before, _ := etherlinkAdapter(t, c, p.URL())
	ec := client(t, c.URL())
	start := latestNonce(t, ec, before.Address())
	j := chaintest.NewJournal()
	cp := receipt.CheckpointRef{KeyHash: 0x0badcafe, Size: 12, Root: randomRoot(t)}
	first := chains.Anchor{BatchID: 1, Root: cp.Root, Checkpoint: &cp}
	second := chains.Anchor{BatchID: 2, Root: cp.Root, Checkpoint: &cp}
	ctx := context.Background()

	failNextBroadcast(j, p)
	_, err := before.Submit(ctx, first, j)
	require.Error(t, err, "the broadcast failed")
	p.SetFaults(rpcfault.Faults{})
	require.Len(t, j.Records(1), 1, "journaled before the broadcast")

	after, logs := etherlinkAdapter(t, c, p.URL()) // keeper restarted: it remembers no nonce
	ref2, err := after.Submit(ctx, second, j)
	require.NoError(t, err)
	ref1, err := after.Submit(ctx, first, j) // the first batch's retry rebroadcasts its journaled transaction
	require.NoError(t, err)
	assert.NotEqual(t, ref1, ref2, "each batch has a transaction of its own")
	assert.Equal(t, j.Records(1)[0].Ref, ref1)
	assert.Equal(t, start, decodeTx(t, j.Records(1)[0].Raw).Nonce())
	assert.Equal(t, start+1, decodeTx(t, j.Records(2)[0].Raw).Nonce(), "the second batch signed on the nonce after the first's")
	assert.Contains(t, logs.String(), "another batch journaled this very transaction")

	assert.Equal(t, ref1, waitState(t, after, j, 1, chains.Final, 10*time.Second).Ref)
	assert.Equal(t, ref2, waitState(t, after, j, 2, chains.Final, 10*time.Second).Ref)
	assert.Equal(t, start+2, latestNonce(t, ec, after.Address()), "two transactions mined, one per batch")
}

// A broadcast that fails without a word on the transaction may have reached
// the node's pool: the next batch signs on the nonce after it, instead of
// competing for it with a transaction the first batch's retry rebroadcasts.
func TestAfterABroadcastFailsTheNextBatchSignsOnTheFollowingNonceAndEachLandsFirstTime(t *testing.T) {
	c := startChain(t, devchain.Options{})
	p, _ := behindEtherLinkFees(t, c, params.GWei)
	a, _ := etherlinkAdapter(t, c, p.URL())
	ec := client(t, c.URL())
	start := latestNonce(t, ec, a.Address())
	j := chaintest.NewJournal()
	ctx := context.Background()
	first := chains.Anchor{BatchID: 1, Root: randomRoot(t)}
	second := chains.Anchor{BatchID: 2, Root: randomRoot(t)}

	failNextBroadcast(j, p)
	_, err := a.Submit(ctx, first, j)
	require.Error(t, err)
	p.SetFaults(rpcfault.Faults{})

	ref2, err := a.Submit(ctx, second, j)
	require.NoError(t, err)
	assert.Equal(t, start+1, decodeTx(t, j.Records(2)[0].Raw).Nonce())
	ref1, err := a.Submit(ctx, first, j)
	require.NoError(t, err)

	assert.Equal(t, ref1, waitState(t, a, j, 1, chains.Final, 10*time.Second).Ref)
	assert.Equal(t, ref2, waitState(t, a, j, 2, chains.Final, 10*time.Second).Ref)
	assert.Len(t, j.Records(1), 1, "signed once")
	assert.Len(t, j.Records(2), 1, "signed once")
	assert.Equal(t, start+2, latestNonce(t, ec, a.Address()))
}

// A batch signs on a nonce of its own only after it moved to the log's
// newest checkpoint (chains.Anchor.Advance): its first transaction, and one
// signed anew after another anchor took its nonce. So on a chain the trees
// anchored grow with the nonces, whatever the batches' first submits fixed:
// here the first batch's broadcast was lost and keeper restarted, the
// second batch took its nonce with a bigger tree, and the first, signed
// again, commits to a tree no smaller than the second's.
func TestABatchSignedOnANonceOfItsOwnCommitsToTheNewestCheckpoint(t *testing.T) {
	c := startChain(t, devchain.Options{})
	p, _ := behindEtherLinkFees(t, c, params.GWei)
	before, _ := etherlinkAdapter(t, c, p.URL())
	ec := client(t, c.URL())
	start := latestNonce(t, ec, before.Address())
	j := chaintest.NewJournal()
	ctx := context.Background()
	tree := func(size uint64) receipt.CheckpointRef {
		return receipt.CheckpointRef{KeyHash: 0x0badcafe, Size: size, Root: randomRoot(t)}
	}
	// The store as the anchoring activity keeps it: the checkpoint each
	// batch commits to, and the log's newest.
	newest, fixed := tree(12), map[int64]receipt.CheckpointRef{1: tree(5)}
	anchorOf := func(batch int64) chains.Anchor {
		cp := fixed[batch]
		return chains.Anchor{BatchID: batch, Root: cp.Root, Checkpoint: &cp,
			Advance: func(context.Context) (chains.Anchor, error) {
				fixed[batch] = newest
				cp := newest
				return chains.Anchor{BatchID: batch, Root: cp.Root, Checkpoint: &cp}, nil
			}}
	}
	journaled := func(batch int64) (receipt.CheckpointRef, uint64) {
		recs := j.Records(batch)
		tx := decodeTx(t, recs[len(recs)-1].Raw)
		got, err := receipt.ParseEVMPayload(tx.Data())
		require.NoError(t, err)
		require.NotNil(t, got.Checkpoint)
		return *got.Checkpoint, tx.Nonce()
	}

	failNextBroadcast(j, p)
	_, err := before.Submit(ctx, anchorOf(1), j)
	require.Error(t, err, "the broadcast failed")
	p.SetFaults(rpcfault.Faults{})
	cp, nonce := journaled(1)
	assert.Equal(t, newest, cp, "the first transaction commits to the newest checkpoint, not the one the batch's first submit fixed")
	assert.Equal(t, start, nonce)

	after, logs := etherlinkAdapter(t, c, p.URL()) // keeper restarted: it remembers no nonce
	newest, fixed[2] = tree(20), tree(20)
	ref2, err := after.Submit(ctx, anchorOf(2), j)
	require.NoError(t, err)
	assert.Equal(t, ref2, waitState(t, after, j, 2, chains.Final, 10*time.Second).Ref)
	_, nonce = journaled(2)
	require.Equal(t, start, nonce, "the second batch took the nonce of the first's lost transaction")

	newest = tree(27)
	ref1, err := after.Submit(ctx, anchorOf(1), j) // the retry finds its nonce taken by another anchor
	require.NoError(t, err)
	assert.Contains(t, logs.String(), "nonce used by another keeper anchor")
	cp, nonce = journaled(1)
	assert.Equal(t, newest, cp, "signed anew on the newest checkpoint, no smaller than the second batch's")
	assert.Equal(t, start+1, nonce)
	assert.Equal(t, ref1, waitState(t, after, j, 1, chains.Final, 10*time.Second).Ref)
}
