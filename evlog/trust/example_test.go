package trust_test

import (
	"fmt"
	"time"

	"github.com/keeperhq/keeper/evlog/trust"
)

// Build a log's trust root as keeper does while it anchors, rotate a key out,
// and ask the root what a verifier asks it: may this account have sent this
// anchor?
func Example() {
	const logKey = "log.keeper.example+e44af6e5+AW5ULB/J+3nIsI9wCYEL1Xt5GTKVyVGTIZcgUPNBMQHI"
	began := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	root, err := trust.New(logKey, began)
	if err != nil {
		fmt.Println(err)
		return
	}
	const (
		etherlink = "eip155:42793"
		first     = "0x4c4936Cebad6e1A7c5cCc7237bB55407Cdd74d78"
		second    = "0x1111111111111111111111111111111111111111"
	)
	// The first account of a network is listed from size 0: it may have
	// anchored batches before the log began.
	root.List("etherlink", etherlink, first, 0, began.AddDate(0, -1, 0))
	before, err := trust.Parse(root.Marshal()) // a copy, as published then
	if err != nil {
		fmt.Println(err)
		return
	}

	// Rotate the key: the first account's range ends at size 100, the
	// second one anchors from there.
	if err := root.Retire(trust.CAIP10(etherlink, first), 100, began.AddDate(0, 2, 0)); err != nil {
		fmt.Println(err)
		return
	}
	root.List("etherlink", etherlink, second, 100, began.AddDate(0, 2, 0))
	for _, a := range root.On("etherlink", etherlink) {
		fmt.Println(a)
	}

	ok, _ := root.Allows("etherlink", etherlink, first, 42)
	fmt.Println("first anchors size 42:", ok)
	ok, why := root.Allows("etherlink", etherlink, first, 150)
	fmt.Println("first anchors size 150:", ok, "-", why)

	// A batch anchor (receipt versions 1 and 2) commits to no size: it
	// counts only from before the log began.
	fmt.Println("batch before the log:", root.AdmitBatch("etherlink", etherlink, first, began.AddDate(0, 0, -7)))
	fmt.Println("batch after the log:", root.AdmitBatch("etherlink", etherlink, first, began.AddDate(0, 0, 7)))

	// A verifier that pinned the old root takes the new one only if it
	// extends it: nothing removed, only ranges closed and accounts added.
	fmt.Println("new extends old:", trust.Extends(before, root))
	fmt.Println("old extends new:", trust.Extends(root, before) == nil)
	// Output:
	// eip155:42793:0x4c4936Cebad6e1A7c5cCc7237bB55407Cdd74d78 (sizes 0–99)
	// eip155:42793:0x1111111111111111111111111111111111111111 (sizes 100–…)
	// first anchors size 42: true
	// first anchors size 150: false - 0x4c4936Cebad6e1A7c5cCc7237bB55407Cdd74d78 sent a checkpoint of 150 entries on eip155:42793; the pinned trust root lists eip155:42793:0x4c4936Cebad6e1A7c5cCc7237bB55407Cdd74d78 (sizes 0–99), eip155:42793:0x1111111111111111111111111111111111111111 (sizes 100–…)
	// batch before the log: <nil>
	// batch after the log: a batch anchor in a block of 2026-01-08T00:00:00Z, on or after the log began (2026-01-01T00:00:00Z): since then every anchor commits to a checkpoint
	// new extends old: <nil>
	// old extends new: false
}
