package anchor

import (
	"context"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/solana"
	"github.com/keeperhq/keeper/internal/dev/devnet"
	"github.com/keeperhq/keeper/internal/workflows"
)

// A Solana batch whose transaction was lost until its blockhash expired
// (a keeper dev restart expires them all) is re-signed on the log's newest
// checkpoint, and the store says so: its receipts prove inclusion in the
// tree its landed anchor names, which is no smaller than the anchors that
// landed meanwhile.
func TestASolanaBatchReSignedAfterItsBlockhashExpiredMovesToTheNewestCheckpoint(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	chain, err := devnet.Start(t.Context(), devnet.Options{SlotTime: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(chain.Stop)
	payer, err := chain.NewFundedKey(10 * devnet.LamportsPerSOL)
	require.NoError(t, err)
	ad, err := solana.New(solana.Config{RPCURL: chain.URL(), Payer: payer,
		PollInterval: 50 * time.Millisecond, RebroadcastInterval: 100 * time.Millisecond, RPCTimeout: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(ad.Close)

	a := &Activities{Store: st, Chains: map[string]chains.Adapter{solana.Name: ad}, Log: newSequencer(t, st)}
	batch := func() workflows.BatchRef {
		return workflows.BatchRef{BatchID: formBatch(t, st, solana.Name), Chain: solana.Name}
	}
	final := func(ref workflows.BatchRef) chains.Status {
		t.Helper()
		require.Eventually(t, func() bool {
			s, err := ad.Status(ctx, ref.BatchID, Journal(st))
			return err == nil && s.State == chains.Final
		}, 10*time.Second, 20*time.Millisecond)
		s, err := ad.Status(ctx, ref.BatchID, Journal(st))
		require.NoError(t, err)
		return s
	}

	lost := batch()
	chain.DropNext(1)
	first, err := a.submit(ctx, lost)
	require.NoError(t, err)
	chain.Advance(200) // its blockhash expires unseen

	landed := batch()
	_, err = a.submit(ctx, landed)
	if err != nil { // the blockhash it reused expired with the first's; retried as the workflow does
		_, err = a.submit(ctx, landed)
	}
	require.NoError(t, err)
	final(landed)
	landedSize, err := st.BatchLogSize(ctx, landed.BatchID)
	require.NoError(t, err)
	require.Equal(t, uint64(2), landedSize)

	again, err := a.submit(ctx, lost)
	require.NoError(t, err)
	assert.NotEqual(t, first.TxRef, again.TxRef)
	size, err := st.BatchLogSize(ctx, lost.BatchID)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, size, landedSize, "the re-signed anchor commits to a tree no smaller than the one that landed before it")
	cp, err := st.CheckpointAt(ctx, size)
	require.NoError(t, err)
	assert.Equal(t, hex.EncodeToString(cp.Root[:]), again.Root, "the submit reports the root its transaction carries")
	assert.Equal(t, again.TxRef, final(lost).Ref)

	rebroadcast, err := a.submit(ctx, lost)
	require.NoError(t, err)
	assert.Equal(t, again, rebroadcast, "a later submit finds the landed transaction, on the checkpoint the batch moved to")
}
