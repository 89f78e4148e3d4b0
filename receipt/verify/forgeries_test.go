package verify_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/dev/receipttest"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// TestEveryForgedReceiptFailsAndTheGenuineOneVerifies runs receipttest's
// forgeries (made from real anchors on the local chains) through the
// package: each fails at its check, the genuine receipt and the one listing
// an anchor twice verify, on two networks each.
func TestEveryForgedReceiptFailsAndTheGenuineOneVerifies(t *testing.T) {
	f := receipttest.NewWorld(t).Forgeries(t)
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			r, err := receipt.Parse(c.Receipt)
			require.NoError(t, err)
			o := verify.Options{Endpoints: c.Endpoints}
			if c.Trust != nil {
				root, err := trust.Open(c.Trust, nil)
				require.NoError(t, err)
				o.Trust = &root
			}
			rep := verify.Check(context.Background(), r, o)
			if c.Check == "" {
				for _, x := range rep.Results {
					require.True(t, x.OK, "%s: %s", x.Chain, x.Failed())
				}
				require.True(t, rep.OK)
				assert.Len(t, rep.Networks, c.Networks)
				assert.Contains(t, rep.Summary(), "verified on 2 network(s)")
				return
			}
			assert.False(t, rep.OK)
			failed := false
			for _, x := range rep.Results {
				if c.Chain == "" || x.Chain == c.Chain {
					t.Logf("%s: %s", x.Chain, x.Failed())
					assert.False(t, x.OK, "%s passed", x.Chain)
					assert.Equal(t, c.Check, x.Check, "%s: %s", x.Chain, x.Failed())
					failed = true
				}
			}
			assert.True(t, failed, "no anchor on %s", c.Chain)
		})
	}
}
