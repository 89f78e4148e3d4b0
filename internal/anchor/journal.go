package anchor

import (
	"context"
	"time"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/store"
)

// TxJournal is the store's journaled transactions (*store.Store).
type TxJournal interface {
	Transactions(ctx context.Context, batchID int64) ([]store.JournaledTx, error)
	UnconfirmedTransactions(ctx context.Context, chain string) ([]store.JournaledTx, error)
	SaveTransaction(ctx context.Context, r store.JournaledTx) error
}

// Journal is the chains.Journal the chain adapters write through: the
// store's journaled transactions.
func Journal(st TxJournal) chains.Journal { return storeJournal{st} }

type storeJournal struct{ st TxJournal }

var _ chains.Journal = storeJournal{}

func (j storeJournal) Transactions(ctx context.Context, batchID int64) ([]chains.TxRecord, error) {
	return records(j.st.Transactions(ctx, batchID))
}

func (j storeJournal) Unconfirmed(ctx context.Context, chain string) ([]chains.TxRecord, error) {
	return records(j.st.UnconfirmedTransactions(ctx, chain))
}

func records(recs []store.JournaledTx, err error) ([]chains.TxRecord, error) {
	if err != nil {
		return nil, err
	}
	out := make([]chains.TxRecord, len(recs))
	for i, r := range recs {
		out[i] = chains.TxRecord{BatchID: r.BatchID, Chain: r.Chain, Ref: r.Ref, Raw: r.Raw, Meta: r.Meta, CreatedAt: r.CreatedAt}
	}
	return out, nil
}

func (j storeJournal) SaveTransaction(ctx context.Context, r chains.TxRecord) error {
	return j.st.SaveTransaction(ctx, store.JournaledTx{BatchID: r.BatchID, Chain: r.Chain, Ref: r.Ref, Raw: r.Raw, Meta: r.Meta, CreatedAt: r.CreatedAt})
}

// heldJournalFor is how long a watcher reuses a batch's journal between
// two reads of it.
const heldJournalFor = 10 * time.Second

// heldJournal is the journal a watcher follows one batch through: the
// chain's status rounds ask for the batch's records every block, and while
// the batch awaits finality nothing journals for it (only a submit does,
// and its workflow is waiting), so they are read again only after
// heldJournalFor (a submit attempt that outlived its timeout on another
// worker is seen then) or after anything is saved through it.
type heldJournal struct {
	chains.Journal
	batchID int64
	recs    []chains.TxRecord
	at      time.Time
}

func (h *heldJournal) Transactions(ctx context.Context, batchID int64) ([]chains.TxRecord, error) {
	if batchID != h.batchID || h.recs == nil || time.Since(h.at) >= heldJournalFor {
		recs, err := h.Journal.Transactions(ctx, batchID)
		if err != nil || batchID != h.batchID {
			return recs, err
		}
		h.recs, h.at = recs, time.Now()
	}
	return h.recs, nil
}

func (h *heldJournal) SaveTransaction(ctx context.Context, r chains.TxRecord) error {
	h.recs = nil
	return h.Journal.SaveTransaction(ctx, r)
}
