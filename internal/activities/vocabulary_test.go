package activities_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// The workflows' outcome vocabulary is recorded in their histories; it must
// keep the values the store's statuses have always had.
func TestOutcomesHaveTheStoresValues(t *testing.T) {
	assert.Equal(t, store.EpochCompleted, workflows.EpochCompleted)
	assert.Equal(t, store.EpochQuarantined, workflows.EpochQuarantined)
	assert.Equal(t, store.EpochFailed, workflows.EpochFailed)
	assert.Equal(t, string(store.SyncCompleted), workflows.BackfillCompleted)
	assert.Equal(t, string(store.SyncFailed), workflows.BackfillFailed)
	assert.Equal(t, string(store.SyncAbandoned), workflows.BackfillAbandoned)
}

// The store names the native coin as the scanners do: the activities pass
// the scanners' asset names to the store as they are.
func TestTheStoreNamesTheNativeCoinAsTheScannersDo(t *testing.T) {
	assert.Equal(t, backfill.NativeAsset, store.NativeAsset)
}
