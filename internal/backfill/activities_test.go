package backfill_test

import (
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

func TestAChunkReachesTheStoreWhole(t *testing.T) {
	tr := scan.Transfer{Tx: "0x01", Kind: scan.KindToken, Index: 3, Asset: "0xt", From: "0xa", To: "0xb",
		Amount: big.NewInt(7), Direction: scan.Out, Block: 12, BlockTime: time.Unix(12, 0)}
	got := backfill.ChunkRecord(scan.Chunk{Transfers: []scan.Transfer{tr}, Cursor: scan.Cursor{Block: 13, Sig: "sig"}, Scanned: 5, Total: 9})
	assert.Equal(t, store.Chunk{Transfers: []store.TransferRecord{{Tx: "0x01", Kind: "token", Index: 3, Asset: "0xt", From: "0xa", To: "0xb",
		Amount: big.NewInt(7), Direction: "out", Block: 12, BlockTime: time.Unix(12, 0)}}, Checkpoint: 13, Cursor: "sig", Scanned: 5, Total: 9}, got)
	assert.Equal(t, tr, backfill.TransferOf(got.Transfers[0]), "and comes back as it went")

	assert.Equal(t, []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(1), Known: true}, {Asset: "0xt"}},
		backfill.HoldingRecords([]scan.Holding{{Asset: scan.NativeAsset, Amount: big.NewInt(1), Known: true}, {Asset: "0xt", Detail: "pruned"}}))
}

// The workflows' outcome vocabulary is recorded in their histories; it must
// keep the values the store's statuses have always had.
func TestBackfillOutcomesHaveTheStoresValues(t *testing.T) {
	assert.Equal(t, string(store.SyncCompleted), workflows.BackfillCompleted)
	assert.Equal(t, string(store.SyncFailed), workflows.BackfillFailed)
	assert.Equal(t, string(store.SyncAbandoned), workflows.BackfillAbandoned)
}

// The store names the native coin as the scanners do: the activities pass
// the scanners' asset names to the store as they are.
func TestTheStoreNamesTheNativeCoinAsTheScannersDo(t *testing.T) {
	assert.Equal(t, scan.NativeAsset, store.NativeAsset)
}
