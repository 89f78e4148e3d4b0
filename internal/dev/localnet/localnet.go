// Package localnet starts the local chains `keeper dev` (and `keeper
// devchains`) anchor on when no real endpoint is configured: an EtherLink-like
// EVM chain (a go-ethereum node with a dev genesis, sealing blocks on a timer,
// over HTTP JSON-RPC, its chain kept in the data directory) and a Solana-like
// devnet (its ledger journaled in the data directory), each with a funded
// key written to the data directory. Both go on where they stopped after a
// restart or a kill, so receipts from earlier runs still verify against
// them; see docs/chains.md.
package localnet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/devchain"
	"github.com/keeperhq/keeper/internal/dev/devnet"
)

// Options choose which local chains to start and where.
type Options struct {
	Dir        string // keys live in Dir/chains
	EVM        bool
	EVMPort    int // 0 = free port
	EVMBlock   time.Duration
	EVMChainID uint64
	Solana     bool
	SolanaPort int
	SolanaSlot time.Duration
	Logger     *slog.Logger
}

// Net is the running local chains. Fields are empty for chains not started.
type Net struct {
	EVM    *devchain.Chain
	Solana *devnet.Devnet
	cancel context.CancelFunc
}

// KeyDir is where the local chains keep their funded keys.
func KeyDir(dataDir string) string { return filepath.Join(dataDir, config.DevKeyDir) }

// EVMKeyFile is the local EVM chain's funded dev key (hex).
func EVMKeyFile(dataDir string) string { return filepath.Join(KeyDir(dataDir), devchain.KeyFileName) }

// SolanaKeyFile is the local devnet's funded fee payer (JSON keypair).
func SolanaKeyFile(dataDir string) string {
	return filepath.Join(KeyDir(dataDir), devnet.PayerKeyFileName)
}

// StartFor starts the local chains the configuration needs (those with no
// RPC URL or URL list configured) and points cfg at them. It returns nil when none is
// needed.
func StartFor(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Net, error) {
	o := Options{
		Dir: cfg.DataDir, EVMPort: cfg.Dev.EVMPort, EVMBlock: cfg.Dev.EVMBlockTime, EVMChainID: uint64(cfg.EVM.ChainID),
		SolanaPort: cfg.Dev.SolanaPort, SolanaSlot: cfg.Dev.SolanaSlotTime, Logger: log,
		EVM:    cfg.HasChain("etherlink") && !cfg.EVM.HasEndpoint(),
		Solana: cfg.HasChain("solana") && !cfg.Solana.HasEndpoint(),
	}
	if !o.EVM && !o.Solana {
		return nil, nil
	}
	n, err := Start(ctx, o)
	if err != nil {
		return nil, err
	}
	if n.EVM != nil {
		cfg.EVM.RPCURL = n.EVM.URL()
	}
	if n.Solana != nil {
		cfg.Solana.RPCURL = n.Solana.URL()
	}
	return n, nil
}

// Print says where the local chains listen.
func (n *Net) Print(out io.Writer, dataDir string) {
	if n == nil {
		return
	}
	if n.EVM != nil {
		fmt.Fprintf(out, "  EtherLink (local) %s   (chain id %d, key %s)\n", n.EVM.URL(), n.EVM.ChainID(), EVMKeyFile(dataDir))
	}
	if n.Solana != nil {
		fmt.Fprintf(out, "  Solana (local)    %s   (fee payer %s)\n", n.Solana.URL(), SolanaKeyFile(dataDir))
	}
}

// Start starts the chains asked for; Stop stops them.
func Start(ctx context.Context, o Options) (*Net, error) {
	n := &Net{}
	// The devnet lives as long as this context, not the caller's start-up one.
	life, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	if o.EVM {
		c, err := devchain.Start(ctx, devchain.Options{Dir: KeyDir(o.Dir), Port: o.EVMPort, BlockTime: o.EVMBlock, ChainID: o.EVMChainID, Persist: true, Logger: o.Logger})
		if err != nil {
			n.Stop()
			var idErr *devchain.ChainIDError
			if errors.As(err, &idErr) {
				return nil, chainIDRefusal(idErr, o.Dir)
			}
			return nil, fmt.Errorf("local EVM chain: %w", err)
		}
		n.EVM = c
	}
	if o.Solana {
		d, err := devnet.Start(life, devnet.Options{Dir: KeyDir(o.Dir), Port: o.SolanaPort, SlotTime: o.SolanaSlot, Logger: o.Logger})
		if err != nil {
			n.Stop()
			return nil, fmt.Errorf("local Solana devnet: %w", err)
		}
		n.Solana = d
	}
	return n, nil
}

// chainIDRefusal is the error for a local EVM chain created with another
// chain id, usually by an older keeper, which ran it with EtherLink
// mainnet's. Its transactions are signed for that id, so it cannot be
// moved to the new one; and deleting the chain alone would leave keeper's
// log, whose trust root names the chain's account, anchored on a chain no
// audit can read any more. So the whole data directory goes.
func chainIDRefusal(e *devchain.ChainIDError, dataDir string) error {
	made := fmt.Sprintf("with chain id %d", e.Stored)
	if e.Stored == devchain.LegacyChainID {
		made = fmt.Sprintf("by an older keeper, with EtherLink mainnet's chain id %d", e.Stored)
	}
	if abs, err := filepath.Abs(dataDir); err == nil {
		dataDir = abs
	}
	return fmt.Errorf("local EVM chain: %s holds a chain made %s, not the local chain's %d, and its transactions are signed for %d, so it cannot be kept: "+
		"stop keeper and delete the data directory %s (the chain and keeper's evidence log together, so that no trust root keeps an account the audit can no longer read; "+
		"docs/chains.md, keeper dev's local chains)",
		e.Dir, made, e.Want, e.Stored, dataDir)
}

// Stop stops every chain that was started.
func (n *Net) Stop() {
	if n.EVM != nil {
		n.EVM.Stop()
	}
	if n.Solana != nil {
		n.Solana.Stop()
	}
	n.cancel()
}
