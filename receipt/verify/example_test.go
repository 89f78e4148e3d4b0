package verify_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// Check a receipt and its original file against an EVM node, trusting
// nothing but the node and the log's trust root the verifier pinned.
func ExampleVerify() {
	const file = "the contract, as signed"
	raw, rpcURL, account, stop, err := anchorOnLocalChain(file) // a receipt keeper would have issued
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	// The log's trust root, pinned once (its /log/trust). This receipt's
	// anchor predates the log, so the root says when the log began.
	root, err := preLogTrust(raw, account)
	if err != nil {
		fmt.Println(err)
		return
	}
	sum := sha256.Sum256([]byte(file))
	report := verify.Verify(context.Background(),
		verify.Input{Receipt: raw, Trust: root, FileSHA256: hex.EncodeToString(sum[:])},
		verify.Options{
			Endpoints: map[string][]string{"etherlink": {rpcURL}}, // e.g. https://node.mainnet.etherlink.com
			Clocks:    []string{receipt.LocalEVMNetwork},          // a local chain's clock counts only when named
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
	// etherlink ok on eip155:7038309 at its block's time true
	// 1
}
