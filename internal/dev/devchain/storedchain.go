package devchain

import (
	"errors"
	"fmt"
	"os"

	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/node"
)

// storedChain is what Start reads of a persisted chain before geth opens
// it; zero when there is none yet.
type storedChain struct {
	scheme  string // its state scheme
	chainID uint64 // its genesis's chain id
}

// probeStoredChain reads the persisted chain in the node's data directory.
func probeStoredChain(stack *node.Node) (storedChain, error) {
	if _, err := os.Stat(stack.ResolvePath("chaindata")); errors.Is(err, os.ErrNotExist) {
		return storedChain{}, nil
	}
	db, err := stack.OpenDatabaseWithOptions("chaindata", node.DatabaseOptions{ReadOnly: true, MetricsNamespace: "devchain/probe/"})
	if err != nil {
		return storedChain{}, fmt.Errorf("devchain: open the persisted chain: %w", err)
	}
	defer db.Close()
	s := storedChain{scheme: rawdb.ReadStateScheme(db)}
	if cfg := rawdb.ReadChainConfig(db, rawdb.ReadCanonicalHash(db, 0)); cfg != nil && cfg.ChainID != nil {
		s.chainID = cfg.ChainID.Uint64()
	}
	return s, nil
}

// ChainIDError is Start's refusal of a persisted chain created with another
// chain id than Options.ChainID. Its transactions are signed for the id it
// has, so it cannot take another: the directory has to go.
type ChainIDError struct {
	Dir    string // the chain's directory (Options.Dir/chain)
	Stored uint64 // the id it was created with
	Want   uint64 // Options.ChainID
}

func (e *ChainIDError) Error() string {
	return fmt.Sprintf("devchain: the chain in %s was created with chain id %d, not %d; its transactions are signed for %d, so it cannot take another id: delete %s to start a new chain",
		e.Dir, e.Stored, e.Want, e.Stored, e.Dir)
}
