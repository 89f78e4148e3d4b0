// Package receipttest helps tests make receipts that verify for real: an
// in-memory evidence log whose proofs come from golang.org/x/mod/sumdb/tlog
// (code keeper does not own) and whose checkpoints are signed with a fresh
// key, and anchors sent as real transactions to a JSON-RPC chain (the local
// dev chains), returned once final.
package receipttest

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/receipt"
)

// Log is an evidence log in memory, a receipt.ProofSource. Safe for
// concurrent use.
type Log struct {
	Signer *evlog.Signer
	VKey   string // the log's verifier key, as /log/key serves it

	mu      sync.Mutex
	hashes  []tlog.Hash
	size    uint64
	notes   map[uint64][]byte
	batches map[int64][][32]byte
}

// NewLog makes an empty log with origin and a new key.
func NewLog(origin string) (*Log, error) {
	skey, vkey, err := evlog.GenerateKey(origin)
	if err != nil {
		return nil, err
	}
	s, err := evlog.NewSigner(skey, origin)
	if err != nil {
		return nil, err
	}
	return newLog(s, vkey), nil
}

// Fork is an empty log under l's key: a second history its operator could
// sign, split from the one it shows.
func (l *Log) Fork() *Log { return newLog(l.Signer, l.VKey) }

func newLog(s *evlog.Signer, vkey string) *Log {
	return &Log{Signer: s, VKey: vkey, notes: map[uint64][]byte{}, batches: map[int64][][32]byte{}}
}

// ReadHashes reads stored hashes (tlog.HashReader).
func (l *Log) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(l.hashes)) {
			return nil, fmt.Errorf("receipttest: no stored hash %d", x)
		}
		out[i] = l.hashes[x]
	}
	return out, nil
}

// Append adds an entry and returns its index.
func (l *Log) Append(entry [32]byte) (uint64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	hs, err := tlog.StoredHashes(int64(l.size), entry[:], l)
	if err != nil {
		return 0, err
	}
	l.hashes = append(l.hashes, hs...)
	l.size++
	return l.size - 1, nil
}

// Root is the root of the log's first size entries.
func (l *Log) Root(size uint64) ([32]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return tlog.TreeHash(int64(size), l)
}

// Checkpoint signs the checkpoint of the log's first size entries and keeps
// it for Checkpoints.
func (l *Log) Checkpoint(size uint64) ([]byte, error) {
	root, err := l.Root(size)
	if err != nil {
		return nil, err
	}
	note, err := l.Signer.Sign(evlog.Checkpoint{Origin: l.Signer.Origin(), Size: size, Root: root})
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.notes[size] = note
	l.mu.Unlock()
	return note, nil
}

// Ref is what an anchor of the checkpoint of size commits to.
func (l *Log) Ref(size uint64) (receipt.CheckpointRef, error) {
	root, err := l.Root(size)
	return receipt.CheckpointRef{KeyHash: l.Signer.Key().Hash, Size: size, Root: root}, err
}

// Checkpoints are the checkpoints signed so far, by size.
func (l *Log) Checkpoints() map[uint64][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make(map[uint64][]byte, len(l.notes))
	for k, v := range l.notes {
		out[k] = v
	}
	return out
}

// AddBatch records a batch's leaf hashes for BatchLeafHashes.
func (l *Log) AddBatch(id int64, leafHashes [][32]byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.batches[id] = leafHashes
}

// Inclusion proves entry index in the tree of size (receipt.ProofSource).
func (l *Log) Inclusion(_ context.Context, index, size uint64) ([][32]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, err := tlog.ProveRecord(int64(size), int64(index), l)
	return plain(p), err
}

// Consistency proves the tree of size m a prefix of the tree of size n
// (receipt.ProofSource).
func (l *Log) Consistency(_ context.Context, m, n uint64) ([][32]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, err := tlog.ProveTree(int64(n), int64(m), l)
	return plain(p), err
}

// BatchLeafHashes are a batch's leaf hashes (receipt.ProofSource).
func (l *Log) BatchLeafHashes(_ context.Context, id int64) ([][32]byte, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	hs, ok := l.batches[id]
	if !ok {
		return nil, fmt.Errorf("receipttest: no batch %d", id)
	}
	return hs, nil
}

func plain(in []tlog.Hash) [][32]byte {
	out := make([][32]byte, len(in))
	for i, h := range in {
		out[i] = h
	}
	return out
}
