package solana

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sol "github.com/gagliardetto/solana-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/receipt"
)

func TestAMemoNamesTheRootAndParsesBackToIt(t *testing.T) {
	var root [32]byte
	for i := range root {
		root[i] = byte(i)
	}

	memo := Memo(root)

	assert.Equal(t, "keeper:v1:000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", memo)
	got, err := ParseMemo(memo)
	require.NoError(t, err)
	assert.Equal(t, root, got.Root)
	assert.Nil(t, got.Checkpoint)
}

func TestParseMemoRejectsAnythingButAKeeperAnchorMemo(t *testing.T) {
	hex64 := strings.Repeat("ab", 32)
	for name, memo := range map[string]string{
		"empty":             "",
		"no prefix":         hex64,
		"another version":   "keeper:v2:" + hex64,
		"prefix only":       "keeper:v1:",
		"short root":        "keeper:v1:" + hex64[:62],
		"long root":         "keeper:v1:" + hex64 + "ab",
		"uppercase hex":     "keeper:v1:" + strings.ToUpper(hex64),
		"not hex":           "keeper:v1:" + strings.Repeat("zz", 32),
		"trailing newline":  "keeper:v1:" + hex64 + "\n",
		"leading space":     " keeper:v1:" + hex64,
		"uppercase prefix":  "KEEPER:v1:" + hex64,
		"0x-prefixed root":  "keeper:v1:0x" + hex64[2:],
		"memo of other app": "hello world",
	} {
		_, err := ParseMemo(memo)
		assert.Error(t, err, name)
	}
}

func TestTheAnchorTransactionHoldsExactlyOneMemoSignedByThePayer(t *testing.T) {
	payer := newKey(t)
	root := rootOf("one memo")
	blockhash := sol.HashFromBytes(bytes.Repeat([]byte{1}, 32))

	for _, fee := range []uint64{0, 1_000} {
		tx, raw, err := BuildAnchorTx(payer, Memo(root), blockhash, fee)
		require.NoError(t, err)

		wire, err := sol.TransactionFromBytes(raw)
		require.NoError(t, err, "the wire bytes decode")
		assert.Equal(t, tx.Signatures, wire.Signatures)
		require.NoError(t, wire.VerifySignatures(), "the payer's signature covers the message")
		assert.Equal(t, blockhash, wire.Message.RecentBlockhash)
		assert.Equal(t, payer.PublicKey(), wire.Message.AccountKeys[0], "the payer pays the fee")
		assert.Equal(t, 1, int(wire.Message.Header.NumRequiredSignatures), "only the payer signs")

		memos, budget := 0, 0
		for _, ix := range wire.Message.Instructions {
			prog, err := wire.Message.ResolveProgramIDIndex(ix.ProgramIDIndex)
			require.NoError(t, err)
			switch {
			case prog.Equals(MemoProgramID):
				memos++
				assert.Equal(t, Memo(root), string(ix.Data))
				require.Len(t, ix.Accounts, 1, "the memo lists one account")
				assert.Equal(t, payer.PublicKey(), wire.Message.AccountKeys[ix.Accounts[0]], "the memo's account is the payer")
				assert.True(t, wire.Message.IsSigner(payer.PublicKey()))
			case prog.Equals(sol.ComputeBudget):
				budget++
			default:
				t.Errorf("fee %d: unexpected program %s in the anchor transaction", fee, prog)
			}
		}
		assert.Equal(t, 1, memos, "fee %d: exactly one memo", fee)
		if fee == 0 {
			assert.Zero(t, budget, "no compute budget instructions without a priority fee")
		} else {
			assert.Equal(t, 2, budget, "a priority fee sets the unit price and limit")
		}
	}
}

func TestATamperedAnchorTransactionNoLongerVerifies(t *testing.T) {
	_, raw, err := BuildAnchorTx(newKey(t), Memo(rootOf("x")), sol.HashFromBytes(bytes.Repeat([]byte{2}, 32)), 0)
	require.NoError(t, err)
	raw[len(raw)-1] ^= 0x01 // last byte of the memo text

	wire, err := sol.TransactionFromBytes(raw)
	require.NoError(t, err)
	assert.Error(t, wire.VerifySignatures())
}

func TestBuildingWithoutAUsableKeyFailsWithoutShowingIt(t *testing.T) {
	good := newKey(t)
	bad := append(sol.PrivateKey(nil), good...)
	bad[40] ^= 0xff // public half no longer matches the seed
	for name, key := range map[string]sol.PrivateKey{"none": nil, "short": good[:32], "inconsistent": bad} {
		_, _, err := BuildAnchorTx(key, Memo(rootOf("x")), sol.Hash{1}, 0)
		require.Error(t, err, name)
		assertNoKey(t, err.Error(), good)
	}
}

func writeKeyFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "id.json")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestLoadKeyReadsASolanaKeygenFile(t *testing.T) {
	key := newKey(t)
	nums, err := json.Marshal([]int(keyInts(key)))
	require.NoError(t, err)

	got, err := LoadKey(writeKeyFile(t, string(nums)))

	require.NoError(t, err)
	assert.Equal(t, key, got)
}

func TestLoadKeyRejectsBadFilesWithoutShowingTheirContent(t *testing.T) {
	key := newKey(t)
	ints := keyInts(key)
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	inconsistent := append([]int(nil), ints...)
	inconsistent[63]++
	outOfRange := append([]int(nil), ints...)
	outOfRange[5] = 300
	for name, content := range map[string]string{
		"base58 instead of JSON": key.String(),
		"63 bytes":               js(ints[:63]),
		"a number above 255":     js(outOfRange),
		"inconsistent halves":    js(inconsistent),
		"an object":              `{"secret":` + js(ints) + `}`,
		"truncated JSON":         js(ints)[:100],
	} {
		_, err := LoadKey(writeKeyFile(t, content))
		require.Error(t, err, name)
		assertNoKey(t, err.Error(), key)
		assert.NotContains(t, err.Error(), js(ints)[1:20], name)
	}
	_, err := LoadKey(filepath.Join(t.TempDir(), "missing.json"))
	assert.ErrorIs(t, err, os.ErrNotExist)
}

func keyInts(k sol.PrivateKey) []int {
	out := make([]int, len(k))
	for i, b := range k {
		out[i] = int(b)
	}
	return out
}

// assertNoKey fails when s shows key in any usual encoding.
func assertNoKey(t *testing.T, s string, key sol.PrivateKey) {
	t.Helper()
	seed := key[:32]
	forms := map[string]string{
		"base58 keypair": key.String(),
		"base58 seed":    sol.PrivateKey(seed).String(),
		"hex seed":       hex.EncodeToString(seed),
		"byte list":      strings.Trim(fmt.Sprint([]byte(seed[:8])), "[]"),
		"JSON array":     strings.Trim(strings.ReplaceAll(fmt.Sprint([]byte(seed[:8])), " ", ","), "[]"),
	}
	for form, v := range forms {
		if v != "" && strings.Contains(s, v) {
			t.Errorf("output shows the payer key (%s): %q", form, s)
		}
	}
}

func TestACheckpointMemoNamesItsBatchAndParsesBack(t *testing.T) {
	ref := receipt.CheckpointRef{KeyHash: 0x0102abcd, Size: 12345, Root: rootOf("cp")}
	memo := chains.Anchor{BatchID: 77, Root: ref.Root, Checkpoint: &ref}.Memo()
	assert.Equal(t, fmt.Sprintf("keeper:v3:0102abcd:12345:%x:77", ref.Root), memo)
	for _, m := range []string{memo, receipt.SolanaCheckpointMemo(ref)} {
		got, err := ParseMemo(m)
		require.NoError(t, err, m)
		require.NotNil(t, got.Checkpoint)
		assert.Equal(t, ref, *got.Checkpoint)
	}
	for _, bad := range []string{
		strings.Replace(memo, ":77", ":077", 1), strings.Replace(memo, ":77", ":0", 1), memo + ":1",
		strings.Replace(memo, "12345", "012345", 1), strings.Replace(memo, "0102abcd", "0102ABCD", 1), strings.Replace(memo, "0102abcd", "102abcd", 1),
	} {
		_, err := ParseMemo(bad)
		assert.ErrorIs(t, err, receipt.ErrNotAnchor, bad)
	}
}
