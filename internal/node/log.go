package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/receipt"
)

// LogSigner reads the evidence log's signing key from the configured file,
// making it (0600, with its directory) when the file does not exist yet.
func LogSigner(cfg config.Config) (signer *evlog.Signer, made bool, err error) {
	path := cfg.LogKeyFileOrDefault()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		if made, err = makeLogKey(path, cfg.Log.Origin); err != nil {
			return nil, false, err
		}
		b, err = os.ReadFile(path)
	}
	if err != nil {
		return nil, false, fmt.Errorf("log key: %w", err)
	}
	s, err := evlog.NewSigner(string(b), cfg.Log.Origin)
	if err != nil {
		return nil, false, fmt.Errorf("log key %s: %w", path, err)
	}
	return s, made, nil
}

// makeLogKey writes a new signing key to path unless a file is there:
// written aside and linked into place, so nodes starting at once over one
// data directory all end up with the one key.
func makeLogKey(path, origin string) (made bool, err error) {
	skey, _, err := evlog.GenerateKey(origin)
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return false, fmt.Errorf("log key: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), ".log-key-*")
	if err != nil {
		return false, fmt.Errorf("log key: %w", err)
	}
	defer os.Remove(f.Name())
	_, werr := f.WriteString(skey + "\n")
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return false, fmt.Errorf("log key %s: %w", path, werr)
	}
	if err := os.Link(f.Name(), path); errors.Is(err, fs.ErrExist) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("log key %s: %w", path, err)
	}
	return true, nil
}

// firstLogRound bounds the sequencer's first round at start.
const firstLogRound = 10 * time.Second

// startLog starts the node's evidence log sequencer (workers sign the log).
func (n *Node) startLog(ctx context.Context) (*logsvc.Sequencer, error) {
	signer, made, err := LogSigner(n.Cfg)
	if err != nil {
		return nil, err
	}
	if made {
		n.Logger.Warn("made a new signing key for the evidence log: back it up, and give every worker of this deployment the same file (KEEPER_LOG_KEY_FILE)",
			"file", n.Cfg.LogKeyFileOrDefault(), "log_key", signer.Key().Text)
	}
	seq := &logsvc.Sequencer{Store: n.Store, Signer: signer, Interval: n.Cfg.Log.CheckpointInterval, Logger: n.Logger.With("component", "evidence-log"),
		Anchored: anchoredCheckpoints(n.Chains)}
	// The first round reads the chains' latest anchors back (a lost store is
	// caught before anything is signed), as part of starting; a chain that
	// does not answer in time leaves it to the rounds that follow.
	first, cancel := context.WithTimeout(ctx, firstLogRound)
	seq.Step(first)
	cancel()
	// The accounts are listed as part of starting too (each chain's network
	// is read once, now, so an idle worker asks its chains nothing later:
	// docs/chains.md, Polling budget); a chain that does not answer in time
	// is listed by the retries that follow.
	first, cancel = context.WithTimeout(ctx, firstLogRound)
	listed := n.listAccountsOnce(first, signer) == nil
	cancel()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		seq.Run(ctx)
	}()
	if err := n.startWitnessing(ctx, signer, seq); err != nil {
		return nil, err
	}
	if !listed {
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.listAccounts(ctx, signer)
		}()
	}
	return seq, nil
}

// listAccounts records the anchoring accounts of this worker's chains in
// the deployment's trust root (docs/log.md, Trust), trying again every
// checkpoint interval until every chain has named its network.
func (n *Node) listAccounts(ctx context.Context, signer *evlog.Signer) {
	var lastErr string
	for {
		err := n.listAccountsOnce(ctx, signer)
		if err == nil || ctx.Err() != nil {
			return
		}
		if err.Error() != lastErr {
			n.Logger.Warn("trust root: cannot list this worker's anchoring accounts yet; trying again", "error", err)
			lastErr = err.Error()
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(max(n.Cfg.Log.CheckpointInterval, time.Second)):
		}
	}
}

func (n *Node) listAccountsOnce(ctx context.Context, signer *evlog.Signer) error {
	var accounts []logsvc.Account
	for _, name := range slices.Sorted(maps.Keys(n.Chains)) {
		ad := n.Chains[name]
		addr := chains.AccountOf(ad)
		if addr == "" {
			continue // an adapter with no account of its own (stub) anchors nothing a verifier reads
		}
		network, err := chains.NetworkOf(ctx, ad)
		if err != nil {
			return fmt.Errorf("%s: its network: %w", name, err)
		}
		if network == "" {
			continue
		}
		accounts = append(accounts, logsvc.Account{Chain: name, Network: network, Address: addr})
	}
	if len(accounts) == 0 {
		return nil
	}
	t, err := logsvc.ListAccounts(ctx, n.Store, signer, accounts, time.Now())
	if err != nil {
		return err
	}
	n.Logger.Info("trust root: this worker's anchoring accounts are listed", "version", t.Version, "accounts", len(t.Root.Accounts))
	return nil
}

// anchoredCheckpoints reads the latest checkpoints the chains hold from
// every adapter that can read them back.
func anchoredCheckpoints(cs map[string]chains.Adapter) func(context.Context) ([]receipt.CheckpointRef, error) {
	return func(ctx context.Context) ([]receipt.CheckpointRef, error) {
		var out []receipt.CheckpointRef
		for name, ad := range cs {
			r, ok := ad.(chains.AnchorReader)
			if !ok {
				continue
			}
			refs, err := r.LatestCheckpoints(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", name, err)
			}
			out = append(out, refs...)
		}
		return out, nil
	}
}
