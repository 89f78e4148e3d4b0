package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/client"
)

func redriveCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "redrive",
		Short: "Re-drive dead-lettered evidence in bulk: by chain, batch, time of dead-lettering, or all. Shows what it would re-drive unless --yes",
		Long: "Re-drive dead-lettered evidence in bulk (POST /v1/dead-letters/redrive): each filter given narrows the selection, none selects " +
			"every dead-lettered evidence. Without --yes (or --execute) it is a dry run: it prints what it would re-drive and changes nothing. " +
			"Running it again after it succeeded re-drives nothing.",
		Args: cobra.NoArgs,
	}
	api := apiFlag(cmd)
	chain := cmd.Flags().String("chain", "", "only anchors on this chain")
	batch := cmd.Flags().Int64("batch", 0, "only the anchors of this batch")
	since := cmd.Flags().String("since", "", "only batches dead-lettered at or after this time: RFC 3339 (2026-01-02T15:04:05Z) or a duration back from now (2h)")
	until := cmd.Flags().String("until", "", "only batches dead-lettered before this time: RFC 3339 or a duration back from now")
	var yes bool
	cmd.Flags().BoolVar(&yes, "yes", false, "re-drive them (without it: a dry run)")
	cmd.Flags().BoolVar(&yes, "execute", false, "the same as --yes")
	asJSON := cmd.Flags().Bool("json", false, "print the API's JSON answer")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		now := time.Now()
		req := client.RedriveRequest{Chain: *chain, Batch: *batch, DryRun: !yes}
		var err error
		if req.Since, err = timeFlag("since", *since, now); err != nil {
			return err
		}
		if req.Until, err = timeFlag("until", *until, now); err != nil {
			return err
		}
		res, err := newClient(*api).Redrive(cmd.Context(), req)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(cmd.OutOrStdout(), res)
		}
		printRedrive(cmd.OutOrStdout(), res)
		return nil
	}
	return cmd
}

// timeFlag reads a time flag: RFC 3339, or a duration back from now; ""
// is no time.
func timeFlag(name, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, fmt.Errorf("--%s %q: want an RFC 3339 time (2026-01-02T15:04:05Z) or a duration back from now (2h)", name, v)
	}
	return t, nil
}

func printRedrive(out io.Writer, res *client.RedriveResult) {
	if res.Anchors == 0 {
		fmt.Fprintln(out, "no dead-lettered evidence matches: nothing to re-drive")
		return
	}
	verb := "re-drove"
	if res.DryRun {
		verb = "dry run: would re-drive"
	}
	fmt.Fprintf(out, "%s %d evidence (%d anchors) from %d dead-lettered batch(es):\n", verb, res.Evidence, res.Anchors, len(res.Batches))
	for _, b := range res.Batches {
		fmt.Fprintf(out, "  batch %d  %-10s %6d evidence  dead-lettered %s", b.ID, b.Chain, b.Evidence, b.DeadLetteredAt.Format(time.RFC3339))
		if b.LastError != "" {
			fmt.Fprintf(out, "  %s", b.LastError)
		}
		fmt.Fprintln(out)
	}
	ids := strings.Join(res.EvidenceIDs, " ")
	if res.MoreIDs {
		ids += fmt.Sprintf(" … and %d more", res.Evidence-len(res.EvidenceIDs))
	}
	fmt.Fprintf(out, "  evidence: %s\n", ids)
	if res.DryRun {
		fmt.Fprintln(out, "run again with --yes to re-drive them")
	}
}
