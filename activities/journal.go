package activities

import (
	"context"

	"github.com/keeperhq/keeper/chains"
	"github.com/keeperhq/keeper/store"
)

// Journal is the chains.Journal the chain adapters write through: the
// store's journaled transactions.
func Journal(st *store.Store) chains.Journal { return storeJournal{st} }

type storeJournal struct{ st *store.Store }

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
