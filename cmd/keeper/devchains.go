package main

import (
	"cmp"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/localnet"
)

func devchainsCmd() *cobra.Command {
	return cli.Configured(&cobra.Command{
		Use:   "devchains",
		Short: "Run only the local EtherLink-like and Solana-like chains (for `keeper worker` / `keeper api` on one machine)",
		Args:  cobra.NoArgs,
	}, config.Base|config.LocalChains, true, func(ctx context.Context, cmd *cobra.Command, cfg *config.Config) error {
		n, err := localnet.StartFor(ctx, cfg, cli.Logger(cfg.LogLevel, cmp.Or(cfg.LogFormat, "text")))
		if err != nil {
			return err
		}
		if n == nil {
			return fmt.Errorf("no local chain to run: KEEPER_CHAINS names no etherlink or solana without an RPC URL")
		}
		defer n.Stop()
		fmt.Fprintln(cmd.OutOrStdout(), "local chains running (Ctrl-C stops them):")
		n.Print(cmd.OutOrStdout(), cfg.DataDir)
		<-ctx.Done()
		return nil
	})
}
