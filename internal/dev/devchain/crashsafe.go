package devchain

import (
	"log/slog"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/eth"
)

// repairAfterCrash makes a persisted chain consistent after geth has opened
// it. When the process was killed, geth rewinds the head to the newest block
// whose state is on disk but leaves what it wrote for later blocks: their
// canonical-number entries, bodies and receipts, and the transaction-lookup
// entries (go-ethereum's rewind does not delete those: "Todo txlookup" in
// BlockChain.setHeadBeyondRoot). Once new blocks are sealed at those numbers,
// a lookup entry names a block that no longer holds its transaction, and
// eth_getTransactionByHash / eth_getTransactionReceipt answer with errors
// (or a handler crash) instead of "not found". So: drop everything above the
// head (SetHead), then every lookup entry above the head or naming a block
// that does not hold its transaction. With fullCheck false (a crash-safe
// chain, where such entries cannot arise) only entries above the head are
// looked at, so opening a long chain stays quick.
func repairAfterCrash(backend *eth.Ethereum, log *slog.Logger, crashSafe bool, dir string) {
	bc := backend.BlockChain()
	db := backend.ChainDb()
	head := bc.CurrentBlock().Number.Uint64()
	reached := head
	for rawdb.ReadCanonicalHash(db, reached+1) != (common.Hash{}) {
		reached++
	}
	if !crashSafe {
		log.Warn("devchain: this persisted chain keeps the state of its recent blocks in memory (created by an older keeper with geth's path scheme): "+
			"if the process is killed, it reopens at the last state on disk and the later blocks and their transactions are gone; "+
			"delete the directory to start a chain that survives a kill", "dir", dir)
	}
	if reached > head {
		log.Warn("devchain: reopened below the block reached before the process stopped: the later blocks were not on disk, their transactions are no longer on the chain",
			"head", head, "reached", reached)
		if err := bc.SetHead(head); err != nil {
			log.Warn("devchain: drop the blocks above the head", "head", head, "error", err)
		}
	}
	stale := 0
	blocks := map[uint64]map[common.Hash]bool{}
	rawdb.DeleteAllTxLookupEntries(db, func(tx common.Hash, v []byte) bool {
		n := rawdb.DecodeTxLookupEntry(v, db)
		drop := n == nil || *n > head
		if !drop && (!crashSafe || reached > head) {
			txs, ok := blocks[*n]
			if !ok {
				txs = map[common.Hash]bool{}
				if b := bc.GetBlockByNumber(*n); b != nil {
					for _, t := range b.Transactions() {
						txs[t.Hash()] = true
					}
				}
				blocks[*n] = txs
			}
			drop = !txs[tx]
		}
		if drop {
			stale++
		}
		return drop
	})
	if stale > 0 {
		log.Warn("devchain: deleted transaction-lookup entries naming blocks that are no longer canonical (those transactions are not found until they are mined again)",
			"entries", stale, "head", head)
	}
}
