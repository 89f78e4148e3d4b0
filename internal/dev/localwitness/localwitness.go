// Package localwitness runs the log's witnesses `keeper dev --witnesses N`
// (and `keeper bench --witnesses N`) start in their process: each a
// `keeper witness` (package witness) on 127.0.0.1, with its key and state
// in the data directory's witnesses/, kept across restarts as a witness's
// state must be.
package localwitness

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/witness"
)

// Witnesses are the witnesses running in this process.
type Witnesses struct {
	names   []string
	servers []*http.Server
	ws      []*witness.Witness
}

// StartFor starts cfg.Dev.Witnesses witnesses of the log whose key the node
// will sign with, and adds them to cfg's KEEPER_LOG_WITNESSES; the quorum
// stays all of them unless KEEPER_LOG_WITNESS_QUORUM says otherwise.
func StartFor(ctx context.Context, cfg *config.Config, log *slog.Logger) (*Witnesses, error) {
	d := &Witnesses{}
	if cfg.Dev.Witnesses == 0 {
		return d, nil
	}
	signer, _, err := node.LogSigner(*cfg)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(cfg.DataDir, "witnesses")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("local witnesses: %w", err)
	}
	for i := 1; i <= cfg.Dev.Witnesses; i++ {
		name := fmt.Sprintf("witness-%d.keeper.localhost", i)
		key, err := keyFile(filepath.Join(dir, fmt.Sprintf("witness-%d.key", i)), name)
		if err != nil {
			d.Stop()
			return nil, err
		}
		w, err := witness.Open(ctx, witness.Config{DB: filepath.Join(dir, fmt.Sprintf("witness-%d.db", i)), Signer: key,
			Logs: []evlog.Key{signer.Key()}, Logger: log.With("witness", name)})
		if err != nil {
			d.Stop()
			return nil, fmt.Errorf("local witness %s: %w", name, err)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			_ = w.Close()
			d.Stop()
			return nil, fmt.Errorf("local witness %s: %w", name, err)
		}
		srv := &http.Server{Handler: w.Handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		d.names, d.servers, d.ws = append(d.names, name), append(d.servers, srv), append(d.ws, w)
		cfg.Log.Witnesses = append(cfg.Log.Witnesses, key.Key().Text+" http://"+ln.Addr().String())
	}
	return d, nil
}

// keyFile reads the witness's key from path, making it (0600) the first
// time.
func keyFile(path, name string) (*evlog.Witness, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		skey, _, gerr := evlog.GenerateWitnessKey(name)
		if gerr != nil {
			return nil, gerr
		}
		if err := os.WriteFile(path, []byte(skey+"\n"), 0o600); err != nil {
			return nil, fmt.Errorf("local witness key: %w", err)
		}
		b = []byte(skey)
	} else if err != nil {
		return nil, fmt.Errorf("local witness key: %w", err)
	}
	w, err := evlog.ParseWitnessSigner(string(b))
	if err != nil {
		return nil, fmt.Errorf("local witness key %s: %w", path, err)
	}
	return w, nil
}

// Names are the witnesses' names, as their cosignature lines carry them.
func (d *Witnesses) Names() []string { return d.names }

// Stop stops the witnesses' servers and closes their state.
func (d *Witnesses) Stop() {
	for _, s := range d.servers {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = s.Shutdown(ctx)
		cancel()
	}
	for _, w := range d.ws {
		_ = w.Close()
	}
}
