package chaintest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
)

func TestAJournalKeepsARecordWhoseSaveReportedACrashAndListsAChainsRecordsOldestFirst(t *testing.T) {
	ctx := context.Background()
	j := NewJournal()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	require.NoError(t, j.SaveTransaction(ctx, chains.TxRecord{BatchID: 2, Chain: "evm", Ref: "b", CreatedAt: t0.Add(time.Second)}))
	require.NoError(t, j.SaveTransaction(ctx, chains.TxRecord{BatchID: 1, Chain: "evm", Ref: "a", CreatedAt: t0}))
	require.NoError(t, j.SaveTransaction(ctx, chains.TxRecord{BatchID: 1, Chain: "solana", Ref: "s", CreatedAt: t0}))

	crash := errors.New("crashed after the write")
	j.SetAfterSave(func(chains.TxRecord) error { return crash })
	require.ErrorIs(t, j.SaveTransaction(ctx, chains.TxRecord{BatchID: 1, Chain: "evm", Ref: "c", CreatedAt: t0.Add(2 * time.Second)}), crash)
	j.SetAfterSave(nil)

	recs, err := j.Transactions(ctx, 1)
	require.NoError(t, err)
	var refs []string
	for _, r := range recs {
		refs = append(refs, r.Ref)
	}
	assert.Equal(t, []string{"a", "s", "c"}, refs, "in the order saved, the crashed one kept")
	assert.EqualValues(t, 1, j.Reads())
	assert.Len(t, j.Records(2), 1)
	assert.EqualValues(t, 1, j.Reads(), "Records is not a read")

	unconfirmed, err := j.Unconfirmed(ctx, "evm")
	require.NoError(t, err)
	refs = nil
	for _, r := range unconfirmed {
		refs = append(refs, r.Ref)
	}
	assert.Equal(t, []string{"a", "b", "c"}, refs, "the chain's records of every batch, oldest first")
}
