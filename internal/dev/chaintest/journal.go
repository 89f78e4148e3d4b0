// Package chaintest holds the test doubles of the chain adapters' contract
// (internal/chains): an in-memory Journal for tests that drive an adapter
// without a store. Only tests link it: it lives under internal/dev/, which
// production packages may not import (docs/architecture.md).
package chaintest

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/keeperhq/keeper/internal/chains"
)

// Journal is an in-memory chains.Journal, safe for concurrent use. It knows
// nothing of confirmation: Unconfirmed lists every record on a chain.
type Journal struct {
	mu        sync.Mutex
	recs      map[int64][]chains.TxRecord
	afterSave func(chains.TxRecord) error
	reads     atomic.Int64
}

// NewJournal returns an empty journal.
func NewJournal() *Journal { return &Journal{recs: map[int64][]chains.TxRecord{}} }

// Transactions returns batchID's records in the order they were saved.
func (j *Journal) Transactions(_ context.Context, batchID int64) ([]chains.TxRecord, error) {
	j.reads.Add(1)
	return j.Records(batchID), nil
}

// SaveTransaction stores r, then runs the hook SetAfterSave set, whose error
// it returns: the record stays saved, as after a worker that crashed right
// after its journal write committed.
func (j *Journal) SaveTransaction(_ context.Context, r chains.TxRecord) error {
	j.mu.Lock()
	j.recs[r.BatchID] = append(j.recs[r.BatchID], r)
	hook := j.afterSave
	j.mu.Unlock()
	if hook != nil {
		return hook(r)
	}
	return nil
}

// Unconfirmed lists every batch's records on chain, oldest first.
func (j *Journal) Unconfirmed(_ context.Context, chain string) ([]chains.TxRecord, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []chains.TxRecord
	for _, recs := range j.recs {
		for _, r := range recs {
			if r.Chain == chain {
				out = append(out, r)
			}
		}
	}
	slices.SortStableFunc(out, func(a, b chains.TxRecord) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

// Records returns batchID's records without counting a read.
func (j *Journal) Records(batchID int64) []chains.TxRecord {
	j.mu.Lock()
	defer j.mu.Unlock()
	return slices.Clone(j.recs[batchID])
}

// Reads counts the calls of Transactions so far.
func (j *Journal) Reads() int64 { return j.reads.Load() }

// SetAfterSave sets the hook every later SaveTransaction runs once its record
// is saved; nil removes it.
func (j *Journal) SetAfterSave(hook func(chains.TxRecord) error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.afterSave = hook
}
