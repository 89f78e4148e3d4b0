package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/witness"
)

// The settings of `keeper witness`, read here rather than in the knob
// table: no other command reads them (docs/production.md, Running keeper
// witness).
const (
	witnessAddrEnv    = "KEEPER_WITNESS_ADDR"
	witnessDBEnv      = "KEEPER_WITNESS_DB"
	witnessKeyFileEnv = "KEEPER_WITNESS_KEY_FILE"
	witnessLogsEnv    = "KEEPER_WITNESS_LOGS"

	defaultWitnessAddr = "127.0.0.1:8088"
)

func witnessCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "witness",
		Short: "Run a c2sp.org/tlog-witness server that cosigns other deployments' log checkpoints (docs/production.md)",
		Args:  cobra.NoArgs,
	}
	addr := cmd.Flags().String("addr", cmp.Or(os.Getenv(witnessAddrEnv), defaultWitnessAddr),
		"address to serve POST /add-checkpoint, GET /refused and GET /metrics on (env "+witnessAddrEnv+")")
	db := cmd.Flags().String("db", cmp.Or(os.Getenv(witnessDBEnv), filepath.Join(dataDir(), "witness.db")),
		"SQLite file of the witness's state, the size and root it cosigned last per log: back it up (env "+witnessDBEnv+")")
	keyFile := cmd.Flags().String("key-file", os.Getenv(witnessKeyFileEnv),
		"file holding the witness's signer key, made by keeper witness keygen (env "+witnessKeyFileEnv+")")
	logs := cmd.Flags().StringSlice("log", splitKeys(os.Getenv(witnessLogsEnv)),
		"verifier key of a log to witness (its /log/key), repeatable or comma-separated (env "+witnessLogsEnv+")")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		signer, err := readWitnessSigner(*keyFile)
		if err != nil {
			return err
		}
		keys, err := parseLogKeys(*logs)
		if err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
		defer stop()
		return serveWitness(ctx, cmd, *addr, witness.Config{DB: *db, Signer: signer, Logs: keys})
	}
	cmd.AddCommand(witnessKeygenCmd())
	return cmd
}

// serveWitness serves the witness on addr until ctx ends, then drains.
func serveWitness(ctx context.Context, cmd *cobra.Command, addr string, c witness.Config) error {
	log := NewLogger(cmd.ErrOrStderr(), os.Getenv("KEEPER_LOG_LEVEL"), cmp.Or(os.Getenv("KEEPER_LOG_FORMAT"), "json"))
	c.Logger = log
	if err := os.MkdirAll(filepath.Dir(c.DB), 0o700); err != nil {
		return fmt.Errorf("%s: %w", witnessDBEnv, err)
	}
	w, err := witness.Open(ctx, c)
	if err != nil {
		return err
	}
	defer w.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) {
			err = op.Err // the address is said once
		}
		return fmt.Errorf("%s: cannot listen on %s: %w", witnessAddrEnv, addr, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(w.Collectors()...)
	mux := http.NewServeMux()
	mux.Handle("/", w.Handler())
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	origins := make([]string, len(c.Logs))
	for i, k := range c.Logs {
		origins[i] = k.Name
	}
	log.Info("keeper witness running", "addr", ln.Addr().String(), "key", w.Key().Text, "logs", origins, "db", c.DB)
	select {
	case <-ctx.Done():
	case err := <-served:
		return fmt.Errorf("%s: stopped serving on %s: %w", witnessAddrEnv, addr, err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}

// readWitnessSigner reads the signer key file; its errors never echo the key.
func readWitnessSigner(path string) (*evlog.Witness, error) {
	if path == "" {
		return nil, fmt.Errorf("--key-file: no witness key (set %s, or make one with `keeper witness keygen`)", witnessKeyFileEnv)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("--key-file: %w", err)
	}
	w, err := evlog.ParseWitnessSigner(string(b))
	if err != nil {
		return nil, fmt.Errorf("--key-file %s: %w", path, err)
	}
	return w, nil
}

// parseLogKeys reads the verifier keys of the logs to witness.
func parseLogKeys(vkeys []string) ([]evlog.Key, error) {
	var keys []evlog.Key
	for _, v := range vkeys {
		k, err := evlog.ParseKey(v)
		if err != nil {
			return nil, fmt.Errorf("--log: %w", err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("--log: no log to witness (give each log's verifier key, its /log/key, or set %s)", witnessLogsEnv)
	}
	return keys, nil
}

// splitKeys splits a list of verifier keys on commas and white space,
// which no key holds.
func splitKeys(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == '\r' })
}

// dataDir is KEEPER_DATA_DIR, or its default.
func dataDir() string { return cmp.Or(os.Getenv("KEEPER_DATA_DIR"), config.Default().DataDir) }

func witnessKeygenCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Make a witness's cosignature key: write its signer key to --out (mode 0600, never over a file) and print its verifier key",
		Args:  cobra.NoArgs,
	}
	name := cmd.Flags().String("name", "", "the witness's name, which its cosignature lines carry: a schema-less URL such as witness.example.org/keeper")
	out := cmd.Flags().String("out", cmp.Or(os.Getenv(witnessKeyFileEnv), filepath.Join(dataDir(), "witness.key")),
		"file to write the signer key to (env "+witnessKeyFileEnv+")")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if *name == "" {
			return errors.New("--name: the witness needs a name (witness.example.org/keeper)")
		}
		skey, vkey, err := evlog.GenerateWitnessKey(*name)
		if err != nil {
			return fmt.Errorf("--name %q: %w", *name, err)
		}
		if err := writeNewKey(*out, skey); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "wrote the signer key of %s to %s (mode 0600: give it to keeper witness as %s, and back it up)\n"+
			"verifier key (each deployment it witnesses lists it in KEEPER_LOG_WITNESSES, with this witness's URL):\n%s\n",
			*name, *out, witnessKeyFileEnv, vkey)
		return nil
	}
	return cmd
}

// writeNewKey writes a secret to a new file only its owner reads, synced.
func writeNewKey(path, secret string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("--out: %s already exists: a new key is a new witness, so keeper never replaces one", path)
	}
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	_, werr := f.WriteString(secret + "\n")
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(path)
		return fmt.Errorf("--out %s: %w", path, werr)
	}
	return nil
}
