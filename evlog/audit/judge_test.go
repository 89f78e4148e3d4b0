package audit_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/audit"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/receipt"
)

// TestJudgeTransactionReadsEachTransactionAsAVerifierWould: one table of
// transactions a listed account could send, each judged against a root
// that lists account A from size 0 and account B from size 6 on an EVM
// network and on a Solana cluster, a log that began at noon and signed its
// checkpoint of 5 entries with root {5}.
func TestJudgeTransactionReadsEachTransactionAsAVerifierWould(t *testing.T) {
	_, vkey, err := evlog.GenerateKey(testOrigin)
	require.NoError(t, err)
	key, err := evlog.ParseKey(vkey)
	require.NoError(t, err)
	began := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	const (
		evmNet = "eip155:42793"
		solNet = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
		evmA   = "0xAAAA000000000000000000000000000000000001"
		evmB   = "0xbbbb000000000000000000000000000000000002"
		solA   = "7xKXtg2CW87d97TXJSDpbD5jBkheTqA83TZRuJosgAsU"
	)
	root, err := trust.New(vkey, began)
	require.NoError(t, err)
	root.List("etherlink", evmNet, evmA, 0, began)
	root.List("etherlink", evmNet, evmB, 6, began)
	root.List("solana", solNet, solA, 0, began)
	signed := map[uint64][32]byte{5: {5}}

	ck := func(size uint64, r byte) receipt.CheckpointRef {
		return receipt.CheckpointRef{KeyHash: key.Hash, Size: size, Root: [32]byte{r}}
	}
	memo := func(s string) [][]byte { return [][]byte{[]byte(s)} }
	evmTx := func(from string, at time.Time, data []byte) chainread.Tx {
		return chainread.Tx{Network: evmNet, Found: true, Succeeded: true, Final: true, Sender: from, Payloads: [][]byte{data}, Block: 9, BlockTime: at}
	}
	solTx := func(at time.Time, memos [][]byte) chainread.Tx {
		return chainread.Tx{Network: solNet, Found: true, Succeeded: true, Final: true, Sender: solA, Payloads: memos, Block: 9, BlockTime: at}
	}
	later, earlier := began.Add(time.Hour), began.Add(-time.Hour)
	v3 := receipt.SolanaCheckpointMemo(ck(5, 5))
	upper := v3[:len(v3)-64] + strings.ToUpper(receipt.SolanaCheckpointMemo(ck(5, 0xab))[len(v3)-64:])

	for _, c := range []struct {
		name  string
		chain string
		tx    chainread.Tx
		want  string // the finding's kind, "" for none
	}{
		{"a checkpoint anchor of the log", "etherlink", evmTx(evmA, later, receipt.EVMCheckpointCalldata(ck(5, 5))), ""},
		{"a checkpoint anchor as a Solana memo with keeper's batch id", "solana", solTx(later, memo(receipt.SolanaCheckpointMemoForBatch(ck(5, 5), 7))), ""},
		{"calldata with a byte more", "etherlink", evmTx(evmA, later, append(receipt.EVMCheckpointCalldata(ck(5, 5)), 0)), audit.KindPayload},
		{"a memo with a leading byte-order mark", "solana", solTx(later, memo("\ufeff"+v3)), audit.KindPayload},
		{"a memo with a trailing newline", "solana", solTx(later, memo(v3+"\n")), audit.KindPayload},
		{"a memo whose root is in upper-case hex", "solana", solTx(later, memo(upper)), audit.KindPayload},
		{"keeper's prefix inside other calldata", "etherlink", evmTx(evmA, later, []byte("transfer; keeper:v3: nothing")), audit.KindPayload},
		{"a memo of keeper's and a stray one", "solana", solTx(later, [][]byte{[]byte(v3), []byte("keeper: hello")}), ""},
		{"keeper's memo twice", "solana", solTx(later, [][]byte{[]byte(v3), []byte(v3)}), audit.KindPayload},
		{"calldata with no keeper payload at all", "etherlink", evmTx(evmA, later, []byte{0xa9, 0x05, 0x9c, 0xbb}), ""},
		{"a batch anchor before the log began", "etherlink", evmTx(evmA, earlier, receipt.EVMCalldata([32]byte{1})), ""},
		{"a batch anchor after the log began", "etherlink", evmTx(evmA, later, receipt.EVMCalldata([32]byte{1})), audit.KindBatch},
		{"a batch anchor before the log began from an account listed from size 6", "etherlink", evmTx(evmB, earlier, receipt.EVMCalldata([32]byte{1})), audit.KindBatch},
		{"a batch anchor in a block stating no time", "solana", solTx(time.Time{}, memo(receipt.SolanaMemo([32]byte{1}))), audit.KindBatch},
		{"a checkpoint of another key", "etherlink", evmTx(evmA, later, receipt.EVMCheckpointCalldata(receipt.CheckpointRef{KeyHash: key.Hash + 1, Size: 5, Root: [32]byte{5}})), audit.KindKey},
		{"a checkpoint of a size the account is not listed for", "etherlink", evmTx(evmB, later, receipt.EVMCheckpointCalldata(ck(5, 5))), audit.KindAccount},
		{"a checkpoint of a size the account is listed for", "etherlink", evmTx(evmB, later, receipt.EVMCheckpointCalldata(ck(6, 6))), ""},
		{"a checkpoint the log signed with another root", "etherlink", evmTx(evmA, later, receipt.EVMCheckpointCalldata(ck(5, 9))), audit.KindFork},
		{"a checkpoint the log has not signed", "etherlink", evmTx(evmA, later, receipt.EVMCheckpointCalldata(ck(7, 9))), ""},
		{"anyone else's transaction", "etherlink", evmTx("0xcccc000000000000000000000000000000000003", later, []byte("keeper:v1:")), ""},
		{"a listed account's failed transaction", "etherlink", func() chainread.Tx {
			tx := evmTx(evmA, later, []byte("keeper:v1:"))
			tx.Succeeded = false
			return tx
		}(), ""},
		{"a listed account's transaction on another network", "etherlink", func() chainread.Tx {
			tx := evmTx(evmA, later, []byte("keeper:v1:"))
			tx.Network = "eip155:1"
			return tx
		}(), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			fs := audit.JudgeTransaction(root, key, c.chain, "tx1", c.tx, signed)
			var got []string
			for _, f := range fs {
				got = append(got, f.Kind)
				assert.Equal(t, c.chain, f.Chain)
				assert.Contains(t, f.Detail, "tx tx1 from "+c.tx.Sender)
			}
			if c.want == "" {
				assert.Empty(t, got, "%v", fs)
			} else {
				assert.Equal(t, []string{c.want}, got, "%v", fs)
			}
		})
	}
}
