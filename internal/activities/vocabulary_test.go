package activities_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/activities"
	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/store"
)

// The workflows' outcome vocabulary is recorded in their histories; it must
// keep the values the store's statuses have always had.
func TestOutcomesHaveTheStoresValues(t *testing.T) {
	assert.Equal(t, store.EpochCompleted, activities.EpochCompleted)
	assert.Equal(t, store.EpochQuarantined, activities.EpochQuarantined)
	assert.Equal(t, store.EpochFailed, activities.EpochFailed)
	assert.Equal(t, string(store.SyncCompleted), activities.BackfillCompleted)
	assert.Equal(t, string(store.SyncFailed), activities.BackfillFailed)
	assert.Equal(t, string(store.SyncAbandoned), activities.BackfillAbandoned)
}

// The store names the native coin as the scanners do: the activities pass
// the scanners' asset names to the store as they are.
func TestTheStoreNamesTheNativeCoinAsTheScannersDo(t *testing.T) {
	assert.Equal(t, backfill.NativeAsset, store.NativeAsset)
}
