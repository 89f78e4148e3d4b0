package devnet

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A client waits for the block height to pass a transaction's
// lastValidBlockHeight before it signs anew; a devnet restarted on the same
// directory must not make it wait for a height the new ledger takes as long
// to reach again.
func TestARestartedDevnetBeginsAboveEveryHeightTheOldOneCouldHaveIssued(t *testing.T) {
	dir := t.TempDir()
	start := func() *Devnet {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		d, err := Start(ctx, Options{Dir: dir, SlotTime: testSlotTime})
		require.NoError(t, err)
		return d
	}
	first := start()
	require.Eventually(t, func() bool { return first.BlockHeight() >= 2*heightEvery }, 30*time.Second, testSlotTime)
	last := first.BlockHeight()
	first.Stop() // as a SIGKILL would: nothing is written at the stop

	second := start()
	defer second.Stop()
	require.Greater(t, second.BlockHeight(), last+maxProcessingAge, "every lastValidBlockHeight the old ledger issued is already past")
}
