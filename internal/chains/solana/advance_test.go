package solana

import (
	"context"
	"strings"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/receipt"
)

// checkpointAnchor is batch's anchor of a checkpoint of size entries.
func checkpointAnchor(batch int64, size uint64) chains.Anchor {
	root := rootOf("tree of " + strings.Repeat("x", int(size)))
	return chains.Anchor{BatchID: batch, Root: root,
		Checkpoint: &receipt.CheckpointRef{KeyHash: 0x0badcafe, Size: size, Root: root}}
}

// journaledMemo is the memo of the journaled transaction ref of batch.
func journaledMemo(t *testing.T, j *chaintest.Journal, batch int64, ref string) string {
	t.Helper()
	for _, r := range j.Records(batch) {
		if r.Ref != ref {
			continue
		}
		tx, err := sol.TransactionFromBytes(r.Raw)
		require.NoError(t, err)
		memos, err := anchorMemos(tx)
		require.NoError(t, err)
		require.Len(t, memos, 1)
		return memos[0]
	}
	require.Failf(t, "not journaled", "transaction %s of batch %d", ref, batch)
	return ""
}

// A batch signs a transaction of its own only after it moved to the log's
// newest checkpoint (chains.Anchor.Advance): its first, and one signed anew
// after every earlier one expired unseen. The anchors other batches landed
// meanwhile committed to bigger trees, and a log's anchors never go down in
// size on a chain.
func TestAnAnchorReSignedAfterItsBlockhashExpiredCommitsToTheNewestCheckpoint(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	ctx := context.Background()
	// The store as the anchoring activity keeps it: the checkpoint each
	// batch commits to, and the log's newest.
	newest, fixed := uint64(3), map[int64]uint64{7: 2, 8: 5}
	anchorOf := func(batch int64) chains.Anchor {
		an := checkpointAnchor(batch, fixed[batch])
		an.Advance = func(context.Context) (chains.Anchor, error) {
			fixed[batch] = max(fixed[batch], newest)
			return checkpointAnchor(batch, fixed[batch]), nil
		}
		return an
	}

	chain.DropNext(1)
	first, err := a.Submit(ctx, anchorOf(7), j)
	require.NoError(t, err)
	assert.Equal(t, receipt.SolanaCheckpointMemoForBatch(*checkpointAnchor(7, 3).Checkpoint, 7), journaledMemo(t, j, 7, first),
		"the first transaction commits to the newest checkpoint, not the one the batch's first submit fixed")
	chain.Advance(expireBlocks) // the send was lost, and its blockhash is past

	newest = 5 // another batch, formed meanwhile, lands
	_, err = a.Submit(ctx, anchorOf(8), j)
	if err != nil { // the blockhash it reused expired with the first's; retried as the workflow does
		_, err = a.Submit(ctx, anchorOf(8), j)
	}
	require.NoError(t, err)
	require.Equal(t, chains.Final, waitFor(t, a, 8, j, 10*time.Second).State)

	newest = 9
	require.Equal(t, chains.Dropped, waitFor(t, a, 7, j, 10*time.Second).State)
	second, err := a.Submit(ctx, anchorOf(7), j)
	require.NoError(t, err)

	assert.Equal(t, receipt.SolanaCheckpointMemoForBatch(*checkpointAnchor(7, 9).Checkpoint, 7), journaledMemo(t, j, 7, second),
		"the re-signed transaction commits to the newest checkpoint, not to one smaller than an anchor that landed")
	st := waitFor(t, a, 7, j, 10*time.Second)
	assert.Equal(t, chains.Final, st.State)
	assert.Equal(t, second, st.Ref)
}

// A worker that moved a batch on and stopped before it journaled the new
// transaction signs it on the next submit, from the checkpoint the batch
// now commits to; an anchor of another checkpoint that did not move on
// from the journaled one is still refused.
func TestABatchMovedOnBeforeItsNewTransactionWasJournaledIsSignedOnTheNextSubmit(t *testing.T) {
	chain, payer := startDevnet(t, 10*time.Millisecond)
	a := newAdapter(t, chain.URL(), payer)
	j := chaintest.NewJournal()
	ctx := context.Background()

	chain.DropNext(1)
	first, err := a.Submit(ctx, checkpointAnchor(4, 3), j)
	require.NoError(t, err)

	_, err = a.Submit(ctx, checkpointAnchor(4, 9), j)
	require.Error(t, err, "the journaled transaction can still land: nothing is signed while it can")
	assert.False(t, retry.IsPermanent(err))
	assert.Len(t, j.Records(4), 1)

	smaller := checkpointAnchor(4, 2)
	_, err = a.Submit(ctx, smaller, j)
	require.Error(t, err)
	assert.True(t, retry.IsPermanent(err), "a batch never moves to a smaller checkpoint")

	chain.Advance(expireBlocks)
	second, err := a.Submit(ctx, checkpointAnchor(4, 9), j)
	require.NoError(t, err)
	assert.NotEqual(t, first, second)
	assert.Equal(t, receipt.SolanaCheckpointMemoForBatch(*checkpointAnchor(4, 9).Checkpoint, 4), journaledMemo(t, j, 4, second))
	assert.Equal(t, chains.Final, waitFor(t, a, 4, j, 10*time.Second).State)
}
