package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// apiFlag is the API base URL every client command takes.
func apiFlag(cmd *cobra.Command) *string {
	def := os.Getenv("KEEPER_API_URL")
	if def == "" {
		def = "http://127.0.0.1:8081"
	}
	return cmd.Flags().String("api", def, "keeper API base URL (env KEEPER_API_URL)")
}

// apiClient talks to keeper's HTTP API.
type apiClient struct {
	base string
	http *http.Client
}

func newClient(base string) *apiClient {
	return &apiClient{base: strings.TrimRight(base, "/"), http: &http.Client{Timeout: 30 * time.Second}}
}

// do sends a request and decodes a 2xx JSON answer into out, or returns the
// API's error message.
func (c *apiClient) do(ctx context.Context, method, path string, body any, out any) (int, []byte, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, fmt.Errorf("bad API URL %q: %w", c.base, err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("cannot reach keeper API at %s: %w", c.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("read answer from %s: %w", c.base, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct{ Code, Message string }
		if json.Unmarshal(raw, &e) == nil && e.Message != "" {
			return resp.StatusCode, raw, fmt.Errorf("%s (HTTP %d, %s)", e.Message, resp.StatusCode, e.Code)
		}
		return resp.StatusCode, raw, fmt.Errorf("HTTP %d from %s%s", resp.StatusCode, c.base, path)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, raw, fmt.Errorf("unexpected answer from %s: %w", c.base, err)
		}
	}
	return resp.StatusCode, raw, nil
}

type evidenceAnswer struct {
	ID        string `json:"id"`
	Status    string `json:"status"`
	Digest    string `json:"digest"`
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error"`
	Anchors   []struct {
		Chain  string `json:"chain"`
		Status string `json:"status"`
		TxRef  string `json:"tx_ref"`
		Block  uint64 `json:"block"`
	} `json:"anchors"`
}

func submitCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "submit FILE...",
		Short: "Hash files locally (content never leaves this machine) and submit their digests as evidence",
		Args:  cobra.MinimumNArgs(1),
	}
	api := apiFlag(cmd)
	chains := cmd.Flags().StringSlice("chains", []string{"multi"}, "chains to anchor on (\"multi\" = every chain the API is configured with)")
	priority := cmd.Flags().Int("priority", 5, "priority 1 (highest) … 10")
	cmd.RunE = func(cmd *cobra.Command, files []string) error {
		// Hash everything first, so a missing file submits nothing.
		digests := make([]string, len(files))
		for i, f := range files {
			d, err := hashFile(f)
			if err != nil {
				return err
			}
			digests[i] = d
		}
		c := newClient(*api)
		for i, d := range digests {
			var ev evidenceAnswer
			body := map[string]any{"digest": d, "chains": *chains, "priority": *priority}
			if _, _, err := c.do(cmd.Context(), http.MethodPost, "/v1/evidence", body, &ev); err != nil {
				return fmt.Errorf("submit %s: %w", files[i], err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\t%s\n", ev.ID, d, files[i])
		}
		return nil
	}
	return cmd
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
		var ev evidenceAnswer
		_, raw, err := newClient(*api).do(cmd.Context(), http.MethodGet, "/v1/evidence/"+url.PathEscape(args[0]), nil, &ev)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		if *asJSON {
			_, err := out.Write(raw)
			return err
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
			fmt.Fprintln(out)
		}
		return nil
	}
	return cmd
}

func receiptCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "receipt ID",
		Short: "Print a confirmed evidence's receipt (keep it: `keeper receipt ID > receipt.json`)",
		Args:  cobra.ExactArgs(1),
	}
	api := apiFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		_, raw, err := newClient(*api).do(cmd.Context(), http.MethodGet, "/v1/evidence/"+url.PathEscape(args[0])+"/receipt", nil, nil)
		if err != nil {
			return err
		}
		_, err = cmd.OutOrStdout().Write(raw)
		return err
	}
	return cmd
}
