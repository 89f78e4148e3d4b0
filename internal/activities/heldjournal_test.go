package activities

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
)

// countingJournal counts the reads that reach the store.
type countingJournal struct {
	chains.Journal
	recs  []chains.TxRecord
	reads int
}

func (c *countingJournal) Transactions(context.Context, int64) ([]chains.TxRecord, error) {
	c.reads++
	return c.recs, nil
}

func (c *countingJournal) SaveTransaction(_ context.Context, r chains.TxRecord) error {
	c.recs = append(c.recs, r)
	return nil
}

func TestAWatchedBatchsJournalIsReadOnceNotEveryStatusRound(t *testing.T) {
	ctx := context.Background()
	under := &countingJournal{recs: []chains.TxRecord{{BatchID: 7, Ref: "0xa"}}}
	j := &heldJournal{Journal: under, batchID: 7}
	for range 50 {
		recs, err := j.Transactions(ctx, 7)
		require.NoError(t, err)
		assert.Len(t, recs, 1)
	}
	assert.Equal(t, 1, under.reads, "fifty status rounds, one read")

	require.NoError(t, j.SaveTransaction(ctx, chains.TxRecord{BatchID: 7, Ref: "0xb"}))
	recs, err := j.Transactions(ctx, 7)
	require.NoError(t, err)
	assert.Len(t, recs, 2, "a transaction saved through it is seen at once")
	assert.Equal(t, 2, under.reads)

	j.at = time.Now().Add(-heldJournalFor)
	_, err = j.Transactions(ctx, 7)
	require.NoError(t, err)
	assert.Equal(t, 3, under.reads, "read again after heldJournalFor, for a submit that journaled elsewhere")

	_, err = j.Transactions(ctx, 8)
	require.NoError(t, err)
	assert.Equal(t, 4, under.reads, "another batch's records are never served from it")
}
