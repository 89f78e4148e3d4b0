package main

import (
	"context"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/receipt"
)

// memLog is an evidence log in memory under a fixed key, a
// receipt.ProofSource (its proofs come from golang.org/x/mod/sumdb/tlog).
// internal/dev/receipttest has one under a fresh random key; the corpus
// needs its bytes fixed.
type memLog struct {
	signer  *evlog.Signer
	vkey    string
	hashes  []tlog.Hash
	size    uint64
	notes   map[uint64][]byte
	batches map[int64][][32]byte
}

func newMemLog(s *evlog.Signer, vkey string) *memLog {
	return &memLog{signer: s, vkey: vkey, notes: map[uint64][]byte{}, batches: map[int64][][32]byte{}}
}

// ReadHashes reads stored hashes (tlog.HashReader).
func (l *memLog) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x < 0 || x >= int64(len(l.hashes)) {
			return nil, fmt.Errorf("no stored hash %d", x)
		}
		out[i] = l.hashes[x]
	}
	return out, nil
}

func (l *memLog) append(entry [32]byte) error {
	hs, err := tlog.StoredHashes(int64(l.size), entry[:], l)
	if err != nil {
		return err
	}
	l.hashes = append(l.hashes, hs...)
	l.size++
	return nil
}

// checkpoint signs the checkpoint of the first size entries and keeps it.
func (l *memLog) checkpoint(size uint64) ([]byte, error) {
	ref, err := l.ref(size)
	if err != nil {
		return nil, err
	}
	signed, err := l.signer.Sign(evlog.Checkpoint{Origin: l.signer.Origin(), Size: size, Root: ref.Root})
	if err != nil {
		return nil, err
	}
	l.notes[size] = signed
	return signed, nil
}

// ref is what an anchor of the checkpoint of size commits to.
func (l *memLog) ref(size uint64) (receipt.CheckpointRef, error) {
	root, err := tlog.TreeHash(int64(size), l)
	return receipt.CheckpointRef{KeyHash: l.signer.Key().Hash, Size: size, Root: root}, err
}

// Inclusion proves entry index in the tree of size (receipt.ProofSource).
func (l *memLog) Inclusion(_ context.Context, index, size uint64) ([][32]byte, error) {
	p, err := tlog.ProveRecord(int64(size), int64(index), l)
	return plain(p), err
}

// Consistency proves the tree of size m a prefix of the tree of size n
// (receipt.ProofSource).
func (l *memLog) Consistency(_ context.Context, m, n uint64) ([][32]byte, error) {
	p, err := tlog.ProveTree(int64(n), int64(m), l)
	return plain(p), err
}

// BatchLeafHashes are a batch's leaf hashes (receipt.ProofSource).
func (l *memLog) BatchLeafHashes(_ context.Context, id int64) ([][32]byte, error) {
	hs, ok := l.batches[id]
	if !ok {
		return nil, fmt.Errorf("no batch %d", id)
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
