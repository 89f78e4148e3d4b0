package epoch_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// The workflows' outcome vocabulary is recorded in their histories; it must
// keep the values the store's statuses have always had: FinishEpoch
// passes a run's outcome to the store as its status.
func TestOutcomesHaveTheStoresValues(t *testing.T) {
	assert.Equal(t, store.EpochCompleted, workflows.EpochCompleted)
	assert.Equal(t, store.EpochQuarantined, workflows.EpochQuarantined)
	assert.Equal(t, store.EpochFailed, workflows.EpochFailed)
}
