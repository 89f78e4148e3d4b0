package anchor

import (
	"context"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/receipts"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/receipt"
)

// withReceipt adds a confirmed evidence's receipt to its view.
func (h *HTTP) withReceipt(ctx context.Context, v *api.Evidence, ev store.Evidence) error {
	if ev.Status != store.StatusConfirmed {
		return nil
	}
	r, err := receipts.Of(ctx, h.Store, ev)
	if err != nil {
		return err
	}
	v.Receipt, v.ExistedBy = &r, receipt.EarliestBlockTime(r.Anchors)
	return nil
}
