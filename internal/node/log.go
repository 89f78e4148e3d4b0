package node

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		seq.Run(ctx)
	}()
	return seq, nil
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
