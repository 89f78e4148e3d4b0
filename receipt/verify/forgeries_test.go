package verify_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
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
		if c.Name == "an EVM endpoint that answers with another from" {
			// The endpoint does lie: it names keeper's account as the
			// sender of the intruder's transaction.
			r, err := receipt.Parse(c.Receipt)
			require.NoError(t, err)
			body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionByHash","params":[%q]}`, r.Anchors[0].TxRef)
			resp, err := http.Post(c.Endpoints["etherlink"][0], "application/json", strings.NewReader(body))
			require.NoError(t, err)
			answer, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Contains(t, string(answer), `"from":"`+f.World.Keeper.Hex()+`"`)
			assert.NotEqual(t, f.World.Keeper.Hex(), f.World.EVMByIntruderRow.Account)
		}
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
