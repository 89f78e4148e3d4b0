package verify_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// Check a receipt and its original file against an EVM node, trusting
// nothing but the node.
func ExampleReceipt() {
	const file = "the contract, as signed"
	raw, rpcURL, stop, err := anchorOnLocalChain(file) // a receipt keeper would have issued
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
	results := verify.Receipt(context.Background(), r, verify.Options{
		RPC: map[string]string{"etherlink": rpcURL}, // e.g. https://node.mainnet.etherlink.com
	})
	for _, res := range results {
		if res.OK {
			fmt.Println(res.Chain, "ok on", res.Network)
		} else {
			fmt.Println(res.Chain, "FAIL", res.Failed())
		}
	}
	// Output: etherlink ok on eip155:42793
}
