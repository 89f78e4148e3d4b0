package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/client"
)

func backfillCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "backfill",
		Short: "Backfill wallets' history (add a wallet, watch its progress per network, read its balances)",
	}
	cmd.AddCommand(backfillAddCmd(), backfillStatusCmd())
	return cmd
}

func backfillAddCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "add ADDRESS",
		Short: "Add a wallet: backfill its history on its networks (adding it again restarts failed or abandoned networks)",
		Args:  cobra.ExactArgs(1),
	}
	api := apiFlag(cmd)
	networks := cmd.Flags().StringSlice("networks", nil, "networks to backfill (default: every configured network the address fits)")
	watch := cmd.Flags().Bool("watch", false, "then refresh the status until the backfill is done")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := newClient(*api)
		wa, started, err := c.AddWallet(cmd.Context(), client.WalletRequest{Address: args[0], Networks: *networks})
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if !started {
			fmt.Fprintf(out, "wallet %s is already being backfilled; nothing restarted\n", wa.Address)
		}
		if *watch {
			return watchWallet(cmd.Context(), c, out, wa.Address, time.Second)
		}
		renderWallet(out, wa)
		return nil
	}
	return cmd
}

func backfillStatusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status ADDRESS",
		Short: "Show a wallet's backfill per network with a progress bar, refreshing until done; then its balances",
		Args:  cobra.ExactArgs(1),
	}
	api := apiFlag(cmd)
	once := cmd.Flags().Bool("once", false, "print the status once instead of refreshing")
	asJSON := cmd.Flags().Bool("json", false, "print the API's JSON answer once")
	interval := cmd.Flags().Duration("interval", time.Second, "time between refreshes")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		c := newClient(*api)
		if *asJSON || *once {
			wa, err := c.Wallet(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if *asJSON {
				return printJSON(cmd.OutOrStdout(), wa)
			}
			renderWallet(cmd.OutOrStdout(), wa)
			return nil
		}
		return watchWallet(cmd.Context(), c, cmd.OutOrStdout(), args[0], *interval)
	}
	return cmd
}

// watchWallet redraws the wallet's status until it is done: in place on a
// terminal, otherwise a new frame each time it changes. It fails when a
// network ended FAILED or ABANDONED.
func watchWallet(ctx context.Context, c *client.Client, out io.Writer, addr string, every time.Duration) error {
	tty := isTerminal(out)
	var last string
	for {
		wa, err := c.Wallet(ctx, addr)
		if err != nil {
			return err
		}
		var frame bytes.Buffer
		renderWallet(&frame, wa)
		switch {
		case frame.String() == last:
		case tty && last != "":
			fmt.Fprintf(out, "\x1b[%dA\x1b[J%s", strings.Count(last, "\n"), frame.String())
		default:
			io.WriteString(out, frame.String())
		}
		last = frame.String()
		if wa.Done {
			for _, n := range wa.Networks {
				if n.Status == "FAILED" || n.Status == "ABANDONED" {
					return fmt.Errorf("the backfill of %s on %s ended %s: %s", wa.Address, n.Network, n.Status, n.LastError)
				}
			}
			return nil
		}
		t := time.NewTimer(every)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

const barWidth = 24

func bar(percent float64) string {
	n := min(max(int(percent/100*barWidth+0.5), 0), barWidth)
	return "[" + strings.Repeat("#", n) + strings.Repeat("-", barWidth-n) + "]"
}

// renderWallet prints a wallet: one line per network with its progress bar,
// then its balances and whether they reconcile with the chain.
func renderWallet(out io.Writer, wa *client.Wallet) {
	fmt.Fprintf(out, "wallet %s  %s\n", wa.Address, wa.Status)
	for _, n := range wa.Networks {
		p := n.Progress
		total := "?"
		if p.Total > 0 {
			total = fmt.Sprint(p.Total)
		}
		fmt.Fprintf(out, "  %-10s %-9s %s %5.1f%%  %d/%s %s, %d transfers", n.Network, n.Status, bar(p.Percent), p.Percent, p.Scanned, total, p.Unit, n.Transfers)
		if b, ok := n.Checkpoint["block"]; ok {
			fmt.Fprintf(out, ", checkpoint block %v", b)
		} else if s, ok := n.Checkpoint["slot"]; ok {
			fmt.Fprintf(out, ", checkpoint slot %v", s)
		}
		if n.RetryCount > 0 {
			fmt.Fprintf(out, ", retries %d", n.RetryCount)
		}
		if n.NextRetryAt != "" {
			fmt.Fprintf(out, ", next retry %s", n.NextRetryAt)
		}
		fmt.Fprintln(out)
		if n.LastError != "" {
			fmt.Fprintf(out, "             last error: %s\n", n.LastError)
		}
	}
	if len(wa.Balances) == 0 {
		return
	}
	fmt.Fprintln(out, "balances (base units: wei, lamports, token units)")
	for _, b := range wa.Balances {
		fmt.Fprintf(out, "  %-10s %-44s %s", b.Network, b.Asset, b.Balance)
		if b.Stale {
			// The network is at work again: this is its last computed value.
			fmt.Fprint(out, "  stale")
			if b.ComputedAt != "" {
				fmt.Fprintf(out, " (computed %s)", b.ComputedAt)
			}
		}
		switch {
		case b.Reconciled == nil:
			fmt.Fprint(out, "  not checked")
		case *b.Reconciled:
			fmt.Fprintf(out, "  reconciled with the chain at %d", b.At)
		default:
			fmt.Fprintf(out, "  DOES NOT reconcile: chain says %s at %d", b.Chain, b.At)
		}
		if b.Detail != "" {
			fmt.Fprintf(out, " (%s)", b.Detail)
		}
		fmt.Fprintln(out)
	}
	switch {
	case wa.Reconciled == nil:
	case *wa.Reconciled:
		fmt.Fprintln(out, "every balance reconciles with the chain")
	default:
		fmt.Fprintln(out, "some balances do not reconcile with the chain")
	}
}
