package anchor_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func TestTheJournalKeepsWhatTheAdaptersSave(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	_, _, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: sha256.Sum256([]byte("1")), Chains: []string{"stub"}, Priority: 5})
	require.NoError(t, err)
	b, ok, err := st.FormBatch(ctx, "stub", 10)
	require.NoError(t, err)
	require.True(t, ok)

	j := anchor.Journal(st)
	at := time.UnixMilli(1_700_000_123_456).UTC()
	saved := []chains.TxRecord{
		{BatchID: b.ID, Chain: "stub", Ref: "0xa", Raw: []byte{1, 0xff}, Meta: json.RawMessage(`{"nonce":1}`), CreatedAt: at},
		{BatchID: b.ID, Chain: "stub", Ref: "0xb", CreatedAt: at},
	}
	for _, r := range saved {
		require.NoError(t, j.SaveTransaction(ctx, r))
	}
	got, err := j.Transactions(ctx, b.ID)
	require.NoError(t, err)
	require.Len(t, got, len(saved))
	for i := range saved {
		assert.Equal(t, saved[i].BatchID, got[i].BatchID)
		assert.Equal(t, saved[i].Chain, got[i].Chain)
		assert.Equal(t, saved[i].Ref, got[i].Ref)
		assert.Equal(t, saved[i].Raw, got[i].Raw)
		assert.Equal(t, saved[i].Meta, got[i].Meta)
		assert.True(t, saved[i].CreatedAt.Equal(got[i].CreatedAt))
	}
	unconfirmed, err := j.Unconfirmed(ctx, "stub")
	require.NoError(t, err)
	assert.Equal(t, got, unconfirmed, "the batch is not confirmed yet")
	none, err := j.Unconfirmed(ctx, "etherlink")
	require.NoError(t, err)
	assert.Empty(t, none)
}
