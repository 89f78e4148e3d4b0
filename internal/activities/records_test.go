package activities

import (
	"math/big"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/store"
)

func TestAChunkReachesTheStoreWhole(t *testing.T) {
	tr := backfill.Transfer{Tx: "0x01", Kind: backfill.KindToken, Index: 3, Asset: "0xt", From: "0xa", To: "0xb",
		Amount: big.NewInt(7), Direction: backfill.Out, Block: 12, BlockTime: time.Unix(12, 0)}
	got := chunkRecord(backfill.Chunk{Transfers: []backfill.Transfer{tr}, Cursor: backfill.Cursor{Block: 13, Sig: "sig"}, Scanned: 5, Total: 9})
	assert.Equal(t, store.Chunk{Transfers: []store.TransferRecord{{Tx: "0x01", Kind: "token", Index: 3, Asset: "0xt", From: "0xa", To: "0xb",
		Amount: big.NewInt(7), Direction: "out", Block: 12, BlockTime: time.Unix(12, 0)}}, Checkpoint: 13, Cursor: "sig", Scanned: 5, Total: 9}, got)
	assert.Equal(t, tr, transferOf(got.Transfers[0]), "and comes back as it went")

	assert.Equal(t, []store.Holding{{Asset: store.NativeAsset, Amount: big.NewInt(1), Known: true}, {Asset: "0xt"}},
		holdingRecords([]backfill.Holding{{Asset: backfill.NativeAsset, Amount: big.NewInt(1), Known: true}, {Asset: "0xt", Detail: "pruned"}}))
}
