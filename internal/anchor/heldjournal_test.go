package anchor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
)

func TestAWatchedBatchsJournalIsReadOnceNotEveryStatusRound(t *testing.T) {
	ctx := context.Background()
	under := chaintest.NewJournal()
	require.NoError(t, under.SaveTransaction(ctx, chains.TxRecord{BatchID: 7, Ref: "0xa"}))
	j := &heldJournal{Journal: under, batchID: 7}
	for range 50 {
		recs, err := j.Transactions(ctx, 7)
		require.NoError(t, err)
		assert.Len(t, recs, 1)
	}
	assert.EqualValues(t, 1, under.Reads(), "fifty status rounds, one read")

	require.NoError(t, j.SaveTransaction(ctx, chains.TxRecord{BatchID: 7, Ref: "0xb"}))
	recs, err := j.Transactions(ctx, 7)
	require.NoError(t, err)
	assert.Len(t, recs, 2, "a transaction saved through it is seen at once")
	assert.EqualValues(t, 2, under.Reads())

	j.at = time.Now().Add(-heldJournalFor)
	_, err = j.Transactions(ctx, 7)
	require.NoError(t, err)
	assert.EqualValues(t, 3, under.Reads(), "read again after heldJournalFor, for a submit that journaled elsewhere")

	_, err = j.Transactions(ctx, 8)
	require.NoError(t, err)
	assert.EqualValues(t, 4, under.Reads(), "another batch's records are never served from it")
}
