package node

import (
	"context"
	"fmt"
	"log/slog"
	"math/big"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/chains/rpcpool"
	"github.com/keeperhq/keeper/internal/chains/solana"
	"github.com/keeperhq/keeper/internal/config"
)

// Endpoints used when no RPC URL is configured: the local chains of
// `keeper dev` / `keeper devchains` on their default ports.
const (
	DefaultEVMRPC    = "http://127.0.0.1:8545"
	DefaultSolanaRPC = "http://127.0.0.1:8899"
)

// EVMRPC is the EtherLink endpoint the configuration names: the first of
// several (RegisterRPCPools makes every client of it use them all).
func EVMRPC(cfg config.Config) string {
	if len(cfg.EVM.RPC.URLs) > 0 {
		return cfg.EVM.RPC.URLs[0]
	}
	if cfg.EVM.RPCURL != "" {
		return cfg.EVM.RPCURL
	}
	return DefaultEVMRPC
}

// SolanaRPC is the Solana endpoint the configuration names: the first of
// several (RegisterRPCPools).
func SolanaRPC(cfg config.Config) string {
	if len(cfg.Solana.RPC.URLs) > 0 {
		return cfg.Solana.RPC.URLs[0]
	}
	if cfg.Solana.RPCURL != "" {
		return cfg.Solana.RPCURL
	}
	return DefaultSolanaRPC
}

// RegisterRPCPools makes every client of a chain with several providers
// (KEEPER_<CHAIN>_RPC_URLS) spread its calls over them (chains/rpcpool).
// A pool already registered for the same list is kept, with its counters.
func RegisterRPCPools(cfg config.Config) error {
	for _, c := range []struct {
		kind  rpcpool.Kind
		eps   config.RPCEndpoints
		rate  int
		label string
	}{
		{rpcpool.EVM, cfg.EVM.RPC, cfg.EVM.RPCRate, "KEEPER_EVM_RPC_URLS"},
		{rpcpool.Solana, cfg.Solana.RPC, cfg.Solana.RPCRate, "KEEPER_SOLANA_RPC_URLS"},
	} {
		if len(c.eps.URLs) < 2 {
			continue
		}
		if p := rpcpool.Lookup(c.eps.URLs[0]); p != nil && slices.Equal(p.URLs(), c.eps.URLs) {
			continue
		}
		trust, err := c.eps.TrustPositions()
		if err != nil {
			return fmt.Errorf("%s: %w", c.label, err)
		}
		p, err := rpcpool.New(c.kind, rpcpool.Options{URLs: c.eps.URLs, Rate: float64(c.rate), Trust: trust, MaxLag: uint64(c.eps.MaxLag)})
		if err != nil {
			return fmt.Errorf("%s: %w", c.label, err)
		}
		rpcpool.Register(p)
	}
	return nil
}

// ChainMaker builds an adapter for a chain that is not one of keeper's
// production chains: the in-process stub of dev/stub, which the keeper
// binary and the tests add. Production packages never link a simulator.
type ChainMaker func(cfg config.Config) (chains.Adapter, error)

// NewChains builds the chain adapters the configuration names: the
// production chains here, any other name from extra. Real adapters check
// their endpoint at start (chain id, reachability).
func NewChains(ctx context.Context, cfg config.Config, extra map[string]ChainMaker, log *slog.Logger) (map[string]chains.Adapter, error) {
	if err := RegisterRPCPools(cfg); err != nil {
		return nil, err
	}
	out := map[string]chains.Adapter{}
	for _, name := range cfg.Chains {
		if mk, ok := extra[name]; ok {
			a, err := mk(cfg)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out[name] = a
			continue
		}
		switch name {
		case "etherlink":
			keyFile := cfg.EVMKeyFileOrDefault()
			key, err := evm.LoadKey(keyFile)
			if err != nil {
				return nil, fmt.Errorf("etherlink signer (KEEPER_EVM_KEY_FILE): %w", err)
			}
			a, err := evm.New(ctx, evm.Config{
				RPCURL: EVMRPC(cfg), Key: key, ChainID: uint64(cfg.EVM.ChainID), Confirmations: uint64(cfg.EVM.Confirmations),
				ResubmitTimeout: cfg.EVM.ResubmitTimeout, FeeCeiling: new(big.Int).Mul(big.NewInt(cfg.EVM.FeeCeilingGwei), big.NewInt(1e9)),
				NoTip: cfg.EVM.NoTip, BlockTime: cfg.EVM.BlockTime, FinalityStall: cfg.EVM.FinalityStall,
				RPCConnections: cfg.EVM.RPCConnections, RPCRate: cfg.EVM.RPCRate, Logger: log,
				PollInterval: cfg.ConfirmPollFor(name), HeadInterval: headInterval(cfg, name),
				// Workers sharing this data directory share the signer's nonces.
				NonceFile: filepath.Join(cfg.DataDir, "etherlink-signer.nonce"),
			})
			if err != nil {
				return nil, fmt.Errorf("etherlink: %w", err)
			}
			out[name] = a
		case solana.Name:
			keyFile := cfg.SolanaKeyFileOrDefault()
			key, err := solana.LoadKey(keyFile)
			if err != nil {
				return nil, fmt.Errorf("solana fee payer (KEEPER_SOLANA_KEY_FILE): %w", err)
			}
			a, err := solana.New(solana.Config{
				RPCURL: SolanaRPC(cfg), Payer: key, Cluster: cfg.Solana.Cluster, Commitment: cfg.Solana.Commitment,
				PriorityFee: uint64(cfg.Solana.PriorityFee), MaxPriorityFee: uint64(cfg.Solana.MaxPriorityFee),
				RPCConnections: cfg.Solana.RPCConnections, RPCRate: cfg.Solana.RPCRate, Logger: log,
				PollInterval: cfg.ConfirmPollFor(name), HeadInterval: headInterval(cfg, name),
			})
			if err != nil {
				return nil, fmt.Errorf("solana: %w", err)
			}
			if err := a.CheckCluster(ctx); err != nil {
				a.Close()
				return nil, fmt.Errorf("solana: KEEPER_SOLANA_CLUSTER: %w", err)
			}
			out[name] = a
		default:
			known := []string{"etherlink", solana.Name}
			for n := range extra {
				known = append(known, n)
			}
			sort.Strings(known)
			return nil, fmt.Errorf("unknown chain %q (this build knows %v)", name, slices.Compact(known))
		}
	}
	return out, nil
}

// closeChains stops the adapters' pollers and connections (the adapters
// that hold any: EVM and Solana).
func closeChains(adapters map[string]chains.Adapter) {
	for _, a := range adapters {
		if c, ok := a.(interface{ Close() }); ok {
			c.Close()
		}
	}
}

// headInterval is the adapters' HeadInterval for chain's polling budget
// (config.HeadPollFor): negative, no head probes, where it is 0.
func headInterval(cfg config.Config, chain string) time.Duration {
	if d := cfg.HeadPollFor(chain); d > 0 {
		return d
	}
	return -1
}
