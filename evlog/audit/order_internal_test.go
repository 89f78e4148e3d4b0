package audit

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/receipt"
)

// One account's anchors never go down in size on a chain; two accounts
// open on one network (workers with keys of their own) land in whatever
// order the chain takes them.
func TestTheOrderCheckHoldsEachAccountsAnchorsNotTwoAccountsInterleaved(t *testing.T) {
	const key = 0x0badcafe
	at := func(account string, block uint64, size uint64) Anchored {
		return Anchored{Chain: "etherlink", Account: account, TxRef: account + "-" + string(rune('a'+block)), Block: block,
			Ref: receipt.CheckpointRef{KeyHash: key, Size: size}}
	}
	for _, tc := range []struct {
		name     string
		anchored []Anchored
		findings int
	}{
		{"one account growing", []Anchored{at("A", 1, 5), at("A", 2, 9), at("A", 3, 9)}, 0},
		{"one account going back", []Anchored{at("A", 1, 9), at("A", 2, 5)}, 1},
		{"two accounts interleaved, each growing", []Anchored{at("A", 1, 5), at("B", 2, 12), at("A", 3, 9), at("B", 4, 14)}, 0},
		{"one of two accounts going back", []Anchored{at("A", 1, 5), at("B", 2, 12), at("B", 3, 7), at("A", 4, 9)}, 1},
		{"another chain's bigger tree", []Anchored{{Chain: "solana", Account: "A", Block: 1, Ref: receipt.CheckpointRef{KeyHash: key, Size: 50}}, at("A", 2, 5)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &Report{}
			r.Key.Hash = key
			checkOrder(tc.anchored, r)
			assert.Len(t, r.Findings, tc.findings, "%v", r.Findings)
			for _, f := range r.Findings {
				assert.Equal(t, KindOrder, f.Kind)
			}
		})
	}
}
