package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// fakeChain answers lookups from a table of transactions, as a chain on
// network "fake:1" would.
func fakeChain(txs map[string]verify.Tx) verify.Lookup {
	return func(ctx context.Context, rpcURL, ref string) (verify.Tx, error) {
		v, ok := txs[ref]
		if !ok {
			return verify.Tx{Network: "fake:1"}, nil
		}
		v.Network = "fake:1"
		return v, nil
	}
}

// theFile is the original file genuineReceipt's evidence is the digest of.
const theFile = "the original file"

// genuineReceipt anchors the salted leaf 2 of a 5-leaf tree in transaction
// "tx-1" on network "fake:1".
func genuineReceipt(t *testing.T) (receipt.Receipt, merkle.Hash) {
	digest := sha256.Sum256([]byte(theFile))
	salt := bytes.Repeat([]byte{7}, receipt.SaltSize)
	var leaves [][]byte
	for i := 0; i < 5; i++ {
		d := sha256.Sum256([]byte(fmt.Sprint("leaf", i)))
		leaves = append(leaves, receipt.Leaf(bytes.Repeat([]byte{byte(i)}, receipt.SaltSize), d))
	}
	leaves[2] = receipt.Leaf(salt, digest)
	tree, err := merkle.Build(leaves)
	require.NoError(t, err)
	path, err := tree.Path(2)
	require.NoError(t, err)
	hexPath := make([][32]byte, len(path))
	for i, h := range path {
		hexPath[i] = h
	}
	root := tree.Root()
	return receipt.Receipt{
		Version: receipt.Version, EvidenceID: "ev_000000000000000000000001", Digest: hex.EncodeToString(digest[:]),
		Salt: hex.EncodeToString(salt), Tree: receipt.TreeRFC6962,
		Anchors: []receipt.Anchor{{Chain: "fake", Network: "fake:1", LeafIndex: 2, TreeSize: 5, Path: receipt.HexPath(hexPath),
			Root: hex.EncodeToString(root[:]), TxRef: "tx-1", Block: 42, BlockHash: "0xb42", Finality: "finalized",
			BlockTime: time.Unix(1700000000, 0).UTC()}},
	}, root
}

func flipHex(s string) string {
	b, _ := hex.DecodeString(s)
	b[0] ^= 1
	return hex.EncodeToString(b)
}

func runVerify(t *testing.T, r receipt.Receipt, flags ...string) (string, error) {
	t.Helper()
	return verifyAt(t, r, filepath.Join(t.TempDir(), "receipt.json"), flags...)
}

// verifyAt writes r to path and verifies it.
func verifyAt(t *testing.T, r receipt.Receipt, path string, flags ...string) (string, error) {
	t.Helper()
	b, err := json.Marshal(r)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, b, 0o600))
	root := Root(nil)
	var out strings.Builder
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append([]string{"verify", path, "--rpc", "http://127.0.0.1:1"}, flags...))
	err = root.Execute()
	return out.String(), err
}

func TestVerifyAcceptsAGenuineReceiptAndNamesTheCheckThatFailsOtherwise(t *testing.T) {
	r, root := genuineReceipt(t)
	lookups["fake"] = fakeChain(map[string]verify.Tx{
		"tx-1":    {Found: true, Succeeded: true, Final: true, Root: root, Block: 42, BlockHash: "0xb42"},
		"tx-2":    {Found: true, Succeeded: true, Final: true, Root: merkle.Hash{1}, Block: 42, BlockHash: "0xb42"},
		"pending": {Found: true, Succeeded: true, Final: false, Root: root, Block: 42, BlockHash: "0xb42"},
		"failed":  {Found: true, Succeeded: false, Final: true, Root: root, Block: 42, BlockHash: "0xb42", Detail: "reverted"},
		"forked":  {Found: true, Succeeded: true, Final: true, Root: root, Block: 42, BlockHash: "0xf0f"},
	})
	defer delete(lookups, "fake")

	original := filepath.Join(t.TempDir(), "original.txt")
	require.NoError(t, os.WriteFile(original, []byte(theFile), 0o600))
	out, err := runVerify(t, r, "--file", original)
	require.NoError(t, err, out)
	assert.Contains(t, out, "file       ok")
	assert.Contains(t, out, "fake       ok    fake:1 tx tx-1")

	changed := filepath.Join(t.TempDir(), "changed.txt")
	require.NoError(t, os.WriteFile(changed, []byte(theFile+"!"), 0o600))
	out, err = runVerify(t, r, "--file", changed)
	require.Error(t, err)
	assert.Contains(t, out, "file       FAIL  digest: the file hashes to")

	cases := []struct {
		name   string
		tamper func(*receipt.Receipt)
		check  string
	}{
		{"a flipped bit in the path", func(r *receipt.Receipt) { r.Anchors[0].Path[1] = flipHex(r.Anchors[0].Path[1]) }, "proof:"},
		{"a flipped bit in the digest", func(r *receipt.Receipt) { r.Digest = flipHex(r.Digest) }, "proof:"},
		{"a flipped bit in the salt", func(r *receipt.Receipt) { r.Salt = flipHex(r.Salt) }, "proof:"},
		{"another network", func(r *receipt.Receipt) { r.Anchors[0].Network = "fake:2" }, "network: the node at http://127.0.0.1:1 is on fake:1, the anchor is on fake:2"},
		{"a flipped bit in the root", func(r *receipt.Receipt) { r.Anchors[0].Root = flipHex(r.Anchors[0].Root) }, "proof:"},
		{"another leaf index", func(r *receipt.Receipt) { r.Anchors[0].LeafIndex = 3 }, "proof:"},
		{"a tx ref the chain does not know", func(r *receipt.Receipt) { r.Anchors[0].TxRef = "tx-9" }, "transaction:"},
		{"a tx carrying another root", func(r *receipt.Receipt) { r.Anchors[0].TxRef = "tx-2" }, "payload:"},
		{"a tx that is not final", func(r *receipt.Receipt) { r.Anchors[0].TxRef = "pending" }, "finality:"},
		{"a tx that failed", func(r *receipt.Receipt) { r.Anchors[0].TxRef = "failed" }, "status:"},
		{"another block", func(r *receipt.Receipt) { r.Anchors[0].Block = 43 }, "block:"},
		{"another block hash", func(r *receipt.Receipt) { r.Anchors[0].TxRef = "forked" }, "block: block 42's hash is 0xf0f"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bad, _ := genuineReceipt(t)
			c.tamper(&bad)
			out, err := runVerify(t, bad)
			require.Error(t, err)
			assert.Contains(t, out, "FAIL  "+c.check, out)
		})
	}
}

func TestVerifyRefusesStubAnchorsAndUnreadableReceipts(t *testing.T) {
	r, _ := genuineReceipt(t)
	r.Anchors[0].Chain = "stub"
	out, err := runVerify(t, r)
	require.Error(t, err)
	assert.Contains(t, out, "FAIL  chain: stub anchors live only inside")

	root := Root(nil)
	root.SetOut(&strings.Builder{})
	root.SetArgs([]string{"verify", filepath.Join(t.TempDir(), "missing.json")})
	err = root.Execute()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "missing.json")
}

func TestVerifyOfFILEReceiptJSONChecksTheFileBesideIt(t *testing.T) {
	r, root := genuineReceipt(t)
	lookups["fake"] = fakeChain(map[string]verify.Tx{"tx-1": {Found: true, Succeeded: true, Final: true, Root: root, Block: 42, BlockHash: "0xb42"}})
	defer delete(lookups, "fake")

	dir := t.TempDir()
	original := filepath.Join(dir, "report.pdf")
	require.NoError(t, os.WriteFile(original, []byte(theFile), 0o600))
	out, err := verifyAt(t, r, filepath.Join(dir, "report.pdf.receipt.json"))
	require.NoError(t, err, out)
	assert.Contains(t, out, "file       ok    "+original+" hashes to the digest")
	assert.Contains(t, out, "verified on 1 chain(s)")

	require.NoError(t, os.WriteFile(original, []byte(theFile+"!"), 0o600))
	out, err = verifyAt(t, r, filepath.Join(dir, "report.pdf.receipt.json"))
	require.Error(t, err)
	assert.Contains(t, out, "file       FAIL  digest: the file hashes to")

	_, err = verifyAt(t, r, filepath.Join(dir, "missing.pdf.receipt.json"))
	require.Error(t, err)
	assert.Equal(t, "cannot read "+filepath.Join(dir, "missing.pdf")+", the file "+filepath.Join(dir, "missing.pdf.receipt.json")+" is for: no such file or directory (give the original with --file)", err.Error())

	// A receipt downloaded under its evidence id names no file: the chains are checked alone.
	out, err = verifyAt(t, r, filepath.Join(dir, "ev_000000000000000000000001.receipt.json"))
	require.NoError(t, err, out)
	assert.NotContains(t, out, "file ")
}
