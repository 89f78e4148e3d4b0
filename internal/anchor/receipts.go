package anchor

import (
	"context"
	"errors"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/receipts"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/receipt"
)

// withReceipt adds a confirmed evidence's receipt to its view, or says
// why it waits (the log's witnesses).
func (h *HTTP) withReceipt(ctx context.Context, v *api.Evidence, ev store.Evidence) error {
	if ev.Status != store.StatusConfirmed {
		return nil
	}
	r, err := receipts.Of(ctx, h.Store, ev)
	if errors.Is(err, receipts.ErrAwaitingWitnesses) {
		v.ReceiptWaits = err.Error()
		return nil
	}
	if err != nil {
		return err
	}
	v.Receipt, v.ExistedBy = &r, receipt.EarliestBlockTime(r.Anchors)
	return nil
}
