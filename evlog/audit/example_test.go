package audit_test

import (
	"encoding/hex"
	"fmt"
	"time"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/evlog/audit"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/receipt"
)

// Judge the transactions an anchoring account sent as any verifier would
// read them: the audit reads each one with package chainread (here they are
// written out by hand) and reports those that should not be anchors.
func ExampleJudgeTransaction() {
	const (
		logKey    = "log.keeper.example+e44af6e5+AW5ULB/J+3nIsI9wCYEL1Xt5GTKVyVGTIZcgUPNBMQHI"
		etherlink = "eip155:42793"
		account   = "0x4c4936Cebad6e1A7c5cCc7237bB55407Cdd74d78"
	)
	began := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	root, err := trust.New(logKey, began) // the root the auditor pinned
	if err != nil {
		fmt.Println(err)
		return
	}
	root.List("etherlink", etherlink, account, 0, began)
	key, err := root.Key()
	if err != nil {
		fmt.Println(err)
		return
	}

	// The log signed its checkpoint of 5 entries with this root.
	var root5 [32]byte
	if _, err := hex.Decode(root5[:], []byte("2a721046297f69c8f801d6f1686a81a6e56f3da930985daef2bf033a83667d3f")); err != nil {
		fmt.Println(err)
		return
	}
	signed := map[uint64][32]byte{5: root5}
	forked := root5
	forked[0] ^= 1

	sent := func(calldata []byte) chainread.Tx {
		return chainread.Tx{
			Network: etherlink, Found: true, Succeeded: true, Final: true,
			Sender: account, Payloads: [][]byte{calldata},
			BlockTime: began.AddDate(0, 1, 0),
		}
	}
	txs := []struct {
		ref string
		tx  chainread.Tx
	}{
		// The log's checkpoint, as keeper anchors it.
		{"0x01", sent(receipt.EVMCheckpointCalldata(receipt.CheckpointRef{KeyHash: key.Hash, Size: 5, Root: root5}))},
		// The same with a byte more: not exactly an anchor payload.
		{"0x02", sent(append(receipt.EVMCheckpointCalldata(receipt.CheckpointRef{KeyHash: key.Hash, Size: 5, Root: root5}), '\n'))},
		// A batch root (receipt versions 1 and 2) sent after the log began.
		{"0x03", sent(receipt.EVMCalldata(root5))},
		// A checkpoint of a log with another key.
		{"0x04", sent(receipt.EVMCheckpointCalldata(receipt.CheckpointRef{KeyHash: 0x01020304, Size: 5, Root: root5}))},
		// A checkpoint of size 5 with another root than the log signed.
		{"0x05", sent(receipt.EVMCheckpointCalldata(receipt.CheckpointRef{KeyHash: key.Hash, Size: 5, Root: forked}))},
	}
	for _, t := range txs {
		findings := audit.JudgeTransaction(root, key, "etherlink", t.ref, t.tx, signed)
		if len(findings) == 0 {
			fmt.Println(t.ref, "ok")
		}
		for _, f := range findings {
			fmt.Println(t.ref, f.Kind)
		}
	}
	// Output:
	// 0x01 ok
	// 0x02 payload
	// 0x03 batch
	// 0x04 key
	// 0x05 fork
}
