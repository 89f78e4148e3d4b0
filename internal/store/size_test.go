package store_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func TestSizeGrowsWithTheEvidenceStoredAndOnSQLiteIsTheFileAfterItsCheckpoint(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		where := db.Fresh(t)
		st := storetest.Open(t, where)
		t.Cleanup(func() { st.Close() })

		empty, err := st.Size(ctx)
		require.NoError(t, err)
		assert.Positive(t, empty, "the tables and indexes take room before any evidence")

		const n = 300
		for i := range n {
			_, _, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf(fmt.Sprint("size", i)), Chains: []string{"stub"}, Priority: 5})
			require.NoError(t, err)
		}
		full, err := st.Size(ctx)
		require.NoError(t, err)
		assert.Greater(t, full-empty, int64(n*32), "every evidence takes at least its digest")

		if !store.IsPostgresURL(where) {
			fi, err := os.Stat(where)
			require.NoError(t, err)
			assert.Equal(t, fi.Size(), full, "the checkpoint moved the WAL's pages into keeper.db, and none is free")
		}
	})
}
