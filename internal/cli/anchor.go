package cli

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/client"
	"github.com/keeperhq/keeper/internal/archive"
)

// apiFlag is the API base URL every client command takes.
func apiFlag(cmd *cobra.Command) *string {
	return cmd.Flags().String("api", apiURL(), "keeper API base URL (env KEEPER_API_URL)")
}

// apiURL is the API base URL of KEEPER_API_URL, else the API's default
// address.
func apiURL() string {
	return cmp.Or(os.Getenv("KEEPER_API_URL"), "http://127.0.0.1:8081")
}

// newClient is the API client of the commands: package client, with the
// API token from KEEPER_API_TOKEN when it is set.
func newClient(base string) *client.Client {
	c := client.New(base)
	c.Token = os.Getenv("KEEPER_API_TOKEN")
	return c
}

// printJSON prints v as the API does: indented by two spaces.
func printJSON(out io.Writer, v any) error {
	enc := json.NewEncoder(out)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// receiptSuffix names a receipt beside its file, as OpenTimestamps' .ots.
const receiptSuffix = ".receipt.json"

func submitCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "submit FILE...",
		Short: "Hash files locally (content never leaves this machine) and submit their digests as evidence; --wait writes FILE.receipt.json beside each once confirmed",
		Args:  cobra.MinimumNArgs(1),
	}
	api := apiFlag(cmd)
	chains := cmd.Flags().StringSlice("chains", []string{"multi"}, "chains to anchor on (\"multi\" = every chain the API is configured with)")
	priority := cmd.Flags().Int("priority", 5, "priority 1 (highest) … 10")
	wait := cmd.Flags().Bool("wait", false, "wait until every file's evidence is confirmed, showing progress, and write FILE.receipt.json beside each file")
	timeout := cmd.Flags().Duration("timeout", time.Hour, "with --wait: give up after this long")
	interval := cmd.Flags().Duration("interval", 2*time.Second, "with --wait: time between status checks")
	cmd.RunE = func(cmd *cobra.Command, files []string) error {
		// Hash everything first, so a missing file submits nothing.
		digests := make([]string, len(files))
		for i, f := range files {
			if *wait {
				if _, err := os.Stat(f + receiptSuffix); err == nil {
					return fmt.Errorf("%s already exists; move it away to anchor %s again", f+receiptSuffix, f)
				}
			}
			d, err := hashFile(f)
			if err != nil {
				return err
			}
			digests[i] = d
		}
		c := newClient(*api)
		ids, err := submitDigests(cmd, c, files, digests, client.EvidenceRequest{Chains: *chains, Priority: *priority})
		if err != nil {
			return err
		}
		if !*wait {
			return nil
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), *timeout)
		defer cancel()
		return waitAndKeepReceipts(ctx, c, cmd, files, ids, *interval)
	}
	return cmd
}

// submitDigests submits each file's digest as evidence like req and
// prints "id digest file" for each: one file with POST /v1/evidence,
// several with POST /v1/evidence/batch, up to client.MaxBatchItems a
// request. It stops after the first request with a refused item, naming
// each file refused, and answers the evidence ids in the files' order.
func submitDigests(cmd *cobra.Command, c *client.Client, files, digests []string, req client.EvidenceRequest) ([]string, error) {
	ids := make([]string, len(files))
	if len(files) == 1 {
		req.Digest = digests[0]
		ev, err := c.SubmitEvidence(cmd.Context(), req)
		if err != nil {
			return nil, fmt.Errorf("submit %s: %w", files[0], err)
		}
		ids[0] = ev.ID
		fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\t%s\n", ev.ID, digests[0], files[0])
		return ids, nil
	}
	for start := 0; start < len(files); start += client.MaxBatchItems {
		items := make([]client.EvidenceRequest, min(client.MaxBatchItems, len(files)-start))
		for i := range items {
			items[i] = req
			items[i].Digest = digests[start+i]
		}
		res, err := c.SubmitBatch(cmd.Context(), items)
		if res == nil {
			return nil, fmt.Errorf("submit %s and %d more: %w", files[start], len(items)-1, err)
		}
		var refused []error
		for i, r := range res {
			f := files[start+i]
			if r.Err != nil {
				refused = append(refused, fmt.Errorf("submit %s: %w", f, r.Err))
				continue
			}
			ids[start+i] = r.ID
			fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\t%s\n", r.ID, digests[start+i], f)
		}
		if err != nil || len(refused) > 0 {
			return nil, errors.Join(append(refused, err)...)
		}
	}
	return ids, nil
}

// waitAndKeepReceipts waits for each file's evidence to be confirmed,
// keeping one progress line on stderr, and writes its receipt beside it.
func waitAndKeepReceipts(ctx context.Context, c *client.Client, cmd *cobra.Command, files, ids []string, every time.Duration) error {
	p := &progress{out: cmd.ErrOrStderr(), tty: isTerminal(cmd.ErrOrStderr()), total: len(files)}
	for i, id := range ids {
		ev, err := c.WaitConfirmed(ctx, id, every, func(ev *client.Evidence) { p.show(files[i], ev) })
		if err != nil {
			p.end()
			if errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("%s: evidence %s is not confirmed after --timeout; `keeper receipt %s > %s` fetches its receipt later", files[i], id, id, files[i]+receiptSuffix)
			}
			return fmt.Errorf("%s: %w", files[i], err)
		}
		path := files[i] + receiptSuffix
		b, err := json.MarshalIndent(ev.Receipt, "", "  ")
		if err == nil {
			err = os.WriteFile(path, append(b, '\n'), 0o644)
		}
		if err != nil {
			p.end()
			return fmt.Errorf("write %s: %w", path, err)
		}
		p.done++
		p.end()
		fmt.Fprintf(cmd.OutOrStdout(), "wrote %s\n", path)
	}
	return nil
}

// progress is the one line --wait keeps up to date: redrawn in place on a
// terminal, otherwise printed again only when it changes.
type progress struct {
	out         io.Writer
	tty         bool
	total, done int
	last        string
}

func (p *progress) show(file string, ev *client.Evidence) {
	var chains []string
	for _, a := range ev.Anchors {
		chains = append(chains, a.Chain+" "+a.Status)
	}
	done := p.done // files finished before this one
	if ev.Status == "confirmed" {
		done++
	}
	line := fmt.Sprintf("%d of %d confirmed; %s: %s (%s)", done, p.total, file, ev.Status, strings.Join(chains, ", "))
	switch {
	case line == p.last:
	case p.tty:
		fmt.Fprintf(p.out, "\r\x1b[K%s", line)
	default:
		fmt.Fprintln(p.out, line)
	}
	p.last = line
}

// end closes the line redrawn in place, before other output.
func (p *progress) end() {
	if p.tty && p.last != "" {
		fmt.Fprintln(p.out)
	}
	p.last = ""
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, unwrapPathError(err))
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, unwrapPathError(err))
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

func statusCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status ID",
		Short: "Show an evidence's status, attempts, last error and anchors",
		Args:  cobra.ExactArgs(1),
	}
	api := apiFlag(cmd)
	asJSON := cmd.Flags().Bool("json", false, "print the API's JSON answer")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ev, err := newClient(*api).Evidence(cmd.Context(), args[0])
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			return printJSON(out, ev)
		}
		fmt.Fprintf(out, "%s  %s  digest %s\n", ev.ID, ev.Status, ev.Digest)
		if ev.Attempts > 0 || ev.LastError != "" {
			fmt.Fprintf(out, "  attempts %d, last error: %s\n", ev.Attempts, ev.LastError)
		}
		for _, a := range ev.Anchors {
			fmt.Fprintf(out, "  %-10s %-11s", a.Chain, a.Status)
			if a.TxRef != "" {
				fmt.Fprintf(out, " tx %s", a.TxRef)
			}
			if a.Block > 0 {
				fmt.Fprintf(out, " block %d", a.Block)
			}
			if !a.BlockTime.IsZero() {
				fmt.Fprintf(out, " at %s", a.BlockTime.UTC().Format(time.RFC3339))
			}
			fmt.Fprintln(out)
		}
		if !ev.ExistedBy.IsZero() {
			fmt.Fprintf(out, "  existed no later than %s, keeper says (`keeper verify` checks it on the chains)\n", ev.ExistedBy.UTC().Format(time.RFC3339))
		}
		return nil
	}
	return cmd
}

func receiptCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "receipt ID",
		Short: "Print a confirmed evidence's receipt (keep it: `keeper receipt ID > FILE.receipt.json`)",
		Args:  cobra.ExactArgs(1),
	}
	api := apiFlag(cmd)
	dir := cmd.Flags().String("archive", "", "the receipts archive directory (KEEPER_RECEIPTS_ARCHIVE_DIR): read the receipt of an evidence retention moved there, offline; with the API reachable, only the file its 410 names is read")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		r, err := newClient(*api).Receipt(cmd.Context(), args[0])
		if err == nil {
			return printJSON(cmd.OutOrStdout(), r)
		}
		var apiErr *client.Error
		fromAPI := errors.As(err, &apiErr)
		if *dir == "" || fromAPI && apiErr.Code != "archived" {
			return err
		}
		// Archived (the 410 names the file), or no API to ask: the archive.
		file := ""
		if fromAPI {
			file = apiErr.Archive
		}
		line, ferr := archive.Find(*dir, file, args[0])
		if ferr != nil {
			return fmt.Errorf("%v; in the archive: %w", err, ferr)
		}
		_, err = cmd.OutOrStdout().Write(append(line, '\n'))
		return err
	}
	return cmd
}
