package verify_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// Check a receipt and its original file against an EVM node, trusting
// nothing but the node and the anchoring account the verifier pinned
// (for a version 3 receipt: the log's trust root, as Options.Trust).
func ExampleReceipt() {
	const file = "the contract, as signed"
	raw, rpcURL, account, stop, err := anchorOnLocalChain(file) // a receipt keeper would have issued
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	r, err := receipt.Parse(raw)
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := verify.File(r, strings.NewReader(file)); err != nil {
		fmt.Println(err)
		return
	}
	report := verify.Check(context.Background(), r, verify.Options{
		RPC:      map[string]string{"etherlink": rpcURL}, // e.g. https://node.mainnet.etherlink.com
		Accounts: []string{"etherlink=" + account},       // the accounts the log's operator publishes
	})
	for _, res := range report.Results {
		if res.OK {
			fmt.Println(res.Chain, "ok on", res.Network, "at its block's time", res.Time.Equal(report.ExistedBy))
		} else {
			fmt.Println(res.Chain, "FAIL", res.Failed())
		}
	}
	fmt.Println(strings.Count(report.Summary(), "existed no later than"))
	// Output:
	// etherlink ok on eip155:42793 at its block's time true
	// 1
}
