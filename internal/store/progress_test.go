package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func TestProgressShowsTheOldestWaitingEvidenceAndTheLastConfirmationOfEachChain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		p, err := st.Progress(ctx, []string{"eth", "stub"})
		require.NoError(t, err)
		assert.Equal(t, map[string]store.ChainProgress{"eth": {}, "stub": {}}, p, "nothing waits, nothing confirmed yet")

		start := time.Now()
		done := insert(t, st, store.NewEvidence{Digest: digestOf("done"), Chains: []string{"stub"}, Priority: 5})
		confirm(t, st, formOne(t, st, "stub", 10), "0x1", 1)
		confirmedAt := time.Now()
		dead := insert(t, st, store.NewEvidence{Digest: digestOf("dead"), Chains: []string{"stub"}, Priority: 5})
		require.NoError(t, st.DeadLetterBatch(ctx, formOne(t, st, "stub", 10).ID, "gave up"))
		inFlight := insert(t, st, store.NewEvidence{Digest: digestOf("flight"), Chains: []string{"stub", "eth"}, Priority: 5})
		formOne(t, st, "stub", 10)
		insert(t, st, store.NewEvidence{Digest: digestOf("later"), Chains: []string{"stub"}, Priority: 5})

		p, err = st.Progress(ctx, []string{"eth", "stub"})
		require.NoError(t, err)
		assert.Equal(t, inFlight.CreatedAt, p["stub"].OldestUnconfirmed,
			"the evidence in a batch in flight is the oldest waiting: the confirmed (%s) and dead-lettered (%s) ones do not wait", done.ID, dead.ID)
		assert.Equal(t, inFlight.CreatedAt, p["eth"].OldestUnconfirmed, "pending on its lane")
		assert.WithinRange(t, p["stub"].LastConfirmed, start.Truncate(time.Millisecond), confirmedAt)
		assert.Zero(t, p["eth"].LastConfirmed)
	})
}
