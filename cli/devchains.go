package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/chains/localnet"
	"github.com/keeperhq/keeper/config"
)

// StartLocalChains starts the local chains the configuration needs (those
// with no RPC URL configured) and points cfg at them. It returns nil when
// none is needed.
func StartLocalChains(ctx context.Context, cfg *config.Config, log *slog.Logger) (*localnet.Net, error) {
	o := localnet.Options{
		Dir: cfg.DataDir, EVMPort: cfg.EVM.DevPort, EVMBlock: cfg.EVM.DevBlockTime, EVMChainID: uint64(cfg.EVM.ChainID),
		SolanaPort: cfg.Solana.DevPort, SolanaSlot: cfg.Solana.DevSlotTime, Logger: log,
		EVM:    cfg.HasChain("etherlink") && cfg.EVM.RPCURL == "",
		Solana: cfg.HasChain("solana") && cfg.Solana.RPCURL == "",
	}
	if !o.EVM && !o.Solana {
		return nil, nil
	}
	n, err := localnet.Start(ctx, o)
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

// PrintLocalChains says where the local chains listen.
func PrintLocalChains(out io.Writer, n *localnet.Net, dataDir string) {
	if n == nil {
		return
	}
	if n.EVM != nil {
		fmt.Fprintf(out, "  EtherLink (local) %s   (chain id %d, key %s)\n", n.EVM.URL(), n.EVM.ChainID(), localnet.EVMKeyFile(dataDir))
	}
	if n.Solana != nil {
		fmt.Fprintf(out, "  Solana (local)    %s   (fee payer %s)\n", n.Solana.URL(), localnet.SolanaKeyFile(dataDir))
	}
}

func devchainsCmd() *cobra.Command {
	cfg, loadErr := config.Load(nil)
	cmd := &cobra.Command{
		Use:   "devchains",
		Short: "Run only the local EtherLink-like and Solana-like chains (for `keeper worker` / `keeper api` on one machine)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if loadErr != nil {
				return loadErr
			}
			if err := cfg.Validate(); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			n, err := StartLocalChains(ctx, &cfg, Logger(cfg.LogLevel, cmp.Or(cfg.LogFormat, "text")))
			if err != nil {
				return err
			}
			if n == nil {
				return fmt.Errorf("no local chain to run: KEEPER_CHAINS names no etherlink or solana without an RPC URL")
			}
			defer n.Stop()
			fmt.Fprintln(cmd.OutOrStdout(), "local chains running (Ctrl-C stops them):")
			PrintLocalChains(cmd.OutOrStdout(), n, cfg.DataDir)
			<-ctx.Done()
			return nil
		},
	}
	cfg.BindFlags(cmd.Flags())
	return cmd
}
