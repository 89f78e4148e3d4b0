package receipt_test

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/receipt"
)

// receiptJSON is a version 3 receipt as keeper issues it (the conformance
// vector v3-etherlink): the evidence's entry in the log, the signed
// checkpoint it leads to and an EtherLink anchor of that checkpoint.
const receiptJSON = `{
  "version": 3,
  "evidence_id": "ev_signed_contract",
  "digest": "1e27fea3c7393b11fd7589200bb0ed56dddedb38d4d50927d7a9a7aebd389993",
  "salt": "ae858371bc3d5b19d94120cf126a1cf4",
  "tree": "rfc6962-sha256",
  "log": {
    "origin": "log.keeper.example",
    "key": "log.keeper.example+e44af6e5+AW5ULB/J+3nIsI9wCYEL1Xt5GTKVyVGTIZcgUPNBMQHI",
    "index": 2,
    "checkpoint": "log.keeper.example\n5\nKnIQRil/acj4AdbxaGqBpuVvPakwmF2u8r8DOoNmfT8=\n\n— log.keeper.example 5Er25QsUrCwfos9ug7+/ZeQsQvTWg/o1n+mo1LYf4+6mYUyIV+ynyJ/lARtTUcdgX3CVjJEBdegiFzhVCONKoqKfagE=\n",
    "inclusion": [
      "edb230e15e259a5c10eaea55a8a8df2cf203fdef8c80d8d49a7a340da0e32107",
      "2a5a0333f826f078c215f1b8fbd3fae8abc15bc01df62f3bfca24d04bb2a37e1",
      "68155692c0e67d00f182e87968dea386fac21250e3157444cbbe17e39f36c6fa"
    ]
  },
  "anchors": [
    {
      "kind": "checkpoint",
      "chain": "etherlink",
      "network": "eip155:42793",
      "tx_ref": "0x6d062f6bc1616645b4bcfc3b73566d92418c6dba00c04942433bb838fe6d6e21",
      "block": 14177600,
      "block_hash": "0x9a2a2143e0edb9cd668b10096c27aa7261f5070b43eb018394f18e07a7a986f5",
      "block_time": "2026-02-10T12:00:00Z",
      "finality": "finalized",
      "account": "0x4c4936Cebad6e1A7c5cCc7237bB55407Cdd74d78",
      "tree_size": 5,
      "root": "2a721046297f69c8f801d6f1686a81a6e56f3da930985daef2bf033a83667d3f",
      "consistency": []
    }
  ],
  "existed_by": "2026-02-10T12:00:00Z"
}`

// Check a receipt's proofs offline: its checkpoint under the log's pinned
// key, its entry's inclusion and each anchor's consistency. What is on chain
// is package receipt/verify's to check.
func Example() {
	r, err := receipt.Parse([]byte(receiptJSON))
	if err != nil {
		fmt.Println(err)
		return
	}
	// Pin the log's key out of band (its trust root), not from the receipt.
	key, err := evlog.ParseKey("log.keeper.example+e44af6e5+AW5ULB/J+3nIsI9wCYEL1Xt5GTKVyVGTIZcgUPNBMQHI")
	if err != nil {
		fmt.Println(err)
		return
	}
	cp, err := key.Open([]byte(r.Log.Checkpoint))
	if err != nil {
		fmt.Println("checkpoint:", err)
		return
	}
	fmt.Println("checkpoint of", cp.Origin, "size", cp.Size)
	fmt.Println("inclusion:", r.CheckInclusion(cp))
	for _, a := range r.Anchors {
		fmt.Println(a.Chain, a.Kind, "anchor of size", a.TreeSize, "proof:", r.CheckProof(a))
	}
	fmt.Println("existed by", r.ExistedBy.Format("2006-01-02 15:04 MST"))
	// Output:
	// checkpoint of log.keeper.example size 5
	// inclusion: <nil>
	// etherlink checkpoint anchor of size 5 proof: <nil>
	// existed by 2026-02-10 12:00 UTC
}

// The exact bytes an anchor transaction carries, and reading them back: an
// EVM transaction's calldata and a Solana memo commit to the same checkpoint.
func ExampleEVMCheckpointCalldata() {
	var root [32]byte
	if _, err := hex.Decode(root[:], []byte("2a721046297f69c8f801d6f1686a81a6e56f3da930985daef2bf033a83667d3f")); err != nil {
		fmt.Println(err)
		return
	}
	ref := receipt.CheckpointRef{KeyHash: 0xe44af6e5, Size: 5, Root: root}

	calldata := receipt.EVMCheckpointCalldata(ref)
	fmt.Printf("%d bytes: %q...\n", len(calldata), calldata[:len(receipt.PayloadPrefixCheckpoint)])
	p, err := receipt.ParseEVMPayload(calldata)
	fmt.Println(err, p.Checkpoint != nil && *p.Checkpoint == ref)

	memo := receipt.SolanaCheckpointMemo(ref)
	fmt.Println(memo)
	p, err = receipt.ParseSolanaPayload(memo)
	fmt.Println(err, p.Checkpoint != nil && *p.Checkpoint == ref)

	// Anything but the exact form is not an anchor: here, upper-case hex.
	_, err = receipt.ParseSolanaPayload("keeper:v3:E44AF6E5:5:" + hex.EncodeToString(root[:]))
	fmt.Println(errors.Is(err, receipt.ErrNotAnchor))
	// Output:
	// 54 bytes: "keeper:v3:"...
	// <nil> true
	// keeper:v3:e44af6e5:5:2a721046297f69c8f801d6f1686a81a6e56f3da930985daef2bf033a83667d3f
	// <nil> true
	// true
}
