package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/internal/config"
)

const configLong = `Print every setting: its environment variable, the value in force and where
that value came from:

  default                     the setting's default
  environment KEEPER_…        a variable (a former name of the setting says
                              "deprecated" and names the one to set)
  flag --…                    a flag given to this command
  preset …                    KEEPER_EVM_NETWORK's network preset, a public
                              KEEPER_SOLANA_CLUSTER's polling budget, or with
                              --dev the defaults ` + "`keeper dev`" + ` applies

Give it the environment and the flags of a command to see what that command
runs with. Secrets are redacted: the API token, the passwords of store and
ledger URLs, RPC endpoints' paths (providers put API keys there).
--markdown prints the table of every setting of docs/configuration.md instead.`

// configCmd is `keeper config`: every setting's value and its source, or
// with --markdown the configuration table.
func configCmd() *cobra.Command {
	var markdown, dev bool
	cmd := Configured(&cobra.Command{
		Use:   "config",
		Short: "Print every setting's value and where it came from (--markdown: the table of every setting)",
		Long:  configLong,
		Args:  cobra.NoArgs,
	}, config.Everything, false, func(_ context.Context, cmd *cobra.Command, cfg *config.Config) error {
		if dev {
			cfg.DevCadence(cmd.Flags().Changed)
			cfg.DevURLs(cmd.Flags().Changed("webhook-allow-private"))
		}
		return printSettings(cmd.OutOrStdout(), cfg.Settings())
	})
	// The table is the same whatever the environment: it needs none.
	withEnvironment := cmd.RunE
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if markdown {
			_, err := fmt.Fprint(cmd.OutOrStdout(), config.MarkdownTable())
			return err
		}
		return withEnvironment(cmd, args)
	}
	cmd.Flags().BoolVar(&markdown, "markdown", false, "print the table of every setting (env, flag, default, what it does) as Markdown")
	cmd.Flags().BoolVar(&dev, "dev", false, "show what keeper dev runs with: its quick cadence and private URLs, unless given")
	return cmd
}

// printSettings writes one line per setting: its variable, its value
// ("" when empty) and its source, in aligned columns.
func printSettings(w io.Writer, settings []config.Setting) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tSOURCE")
	for _, s := range settings {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Env, cmp.Or(s.Value, `""`), s.Source)
	}
	return tw.Flush()
}
