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

	"github.com/keeperhq/keeper/internal/dev/receipttest"
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
		Version: receipt.VersionSalted, EvidenceID: "ev_000000000000000000000001", Digest: hex.EncodeToString(digest[:]),
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

// runKeeper runs the keeper command line with args and returns what it
// printed.
func runKeeper(t *testing.T, args ...string) (string, error) {
	t.Helper()
	root := Root(nil)
	var out strings.Builder
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(args)
	err := root.Execute()
	return out.String(), err
}

// TestVerifyOfAVersionThreeReceiptOnTheLocalChains runs `keeper verify` on
// a receipt anchored for real on the local EVM chain and Solana devnet
// (receipttest.World): with the log key pinned by flag, file or environment,
// or taken from the receipt with a warning; as JSON or as a tlog-proof; and
// against forgeries: a transaction another account sent, two endpoints on
// two forks, another log's key.
func TestVerifyOfAVersionThreeReceiptOnTheLocalChains(t *testing.T) {
	w := receipttest.NewWorld(t)
	t.Setenv(LogKeyEnv, "")
	dir := t.TempDir()
	original := filepath.Join(dir, "contract.txt")
	require.NoError(t, os.WriteFile(original, []byte(w.File), 0o600))
	genuine := filepath.Join(dir, "contract.txt.receipt.json")
	require.NoError(t, os.WriteFile(genuine, w.Receipt, 0o600))
	rpc := []string{"--rpc", "etherlink=" + w.EVMURL, "--rpc", "solana=" + w.SolanaURL}
	verifyV3 := func(t *testing.T, path string, flags ...string) (string, error) {
		t.Helper()
		return runKeeper(t, append(append([]string{"verify", path}, rpc...), flags...)...)
	}
	forged := func(t *testing.T, change func(r *receipt.Receipt)) string {
		r, err := receipt.Parse(w.Receipt)
		require.NoError(t, err)
		change(&r)
		b, err := json.Marshal(r)
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "forged.json")
		require.NoError(t, os.WriteFile(path, b, 0o600))
		return path
	}

	t.Run("a genuine receipt verifies against the pinned key", func(t *testing.T) {
		out, err := verifyV3(t, genuine, "--log-key", w.Log.VKey)
		require.NoError(t, err, out)
		assert.Contains(t, out, "(receipt version 3)")
		assert.Contains(t, out, "file       ok    "+original)
		assert.Contains(t, out, "etherlink  ok    eip155:42793 tx ")
		assert.Contains(t, out, "sent by "+w.Keeper.Hex())
		assert.Contains(t, out, "verified on 2 chain(s)")
		assert.NotContains(t, out, "warning")
	})

	t.Run("the key is pinned from a file or the environment too", func(t *testing.T) {
		keyFile := filepath.Join(t.TempDir(), "log.vkey")
		require.NoError(t, os.WriteFile(keyFile, []byte(w.Log.VKey+"\n"), 0o600))
		out, err := verifyV3(t, genuine, "--log-key", keyFile)
		require.NoError(t, err, out)
		assert.NotContains(t, out, "warning")

		t.Setenv(LogKeyEnv, w.Log.VKey)
		out, err = verifyV3(t, genuine)
		require.NoError(t, err, out)
		assert.NotContains(t, out, "warning")
	})

	t.Run("without a pinned key the receipt's own key is used, with a warning", func(t *testing.T) {
		out, err := verifyV3(t, genuine)
		require.NoError(t, err, out)
		assert.Contains(t, out, "warning: no log key pinned")
		assert.Contains(t, out, "(its /log/key), with --log-key or $KEEPER_LOG_PUBLIC_KEY")
	})

	t.Run("another log's key fails every anchor", func(t *testing.T) {
		other, err := receipttest.NewLog(receipttest.Origin)
		require.NoError(t, err)
		out, err := verifyV3(t, genuine, "--log-key", other.VKey)
		require.Error(t, err)
		assert.Contains(t, out, "etherlink  FAIL  checkpoint: ")
		assert.Contains(t, out, "solana     FAIL  checkpoint: ")
	})

	t.Run("a log key that is none is refused in one line", func(t *testing.T) {
		_, err := verifyV3(t, genuine, "--log-key", "PRIVATE+KEY+keeper.test/log+0000+secret")
		require.Error(t, err)
		assert.Equal(t, "--log-key: neither a log key (ORIGIN+HASH+KEY, as /log/key serves it) nor a readable file holding one", err.Error())
	})

	t.Run("a transaction another account sent fails", func(t *testing.T) {
		path := forged(t, func(r *receipt.Receipt) { r.Anchors[0].TxRef = w.EVMByIntruder })
		out, err := verifyV3(t, path, "--log-key", w.Log.VKey)
		require.Error(t, err)
		assert.Contains(t, out, "etherlink  FAIL  account: transaction "+w.EVMByIntruder+" was sent by "+w.Intruder.Hex()+
			", the receipt's anchoring account is "+w.Keeper.Hex())
		assert.Contains(t, out, "solana     ok")
		assert.Equal(t, "verify: 1 of 2 anchors failed", err.Error())
	})

	t.Run("two endpoints that disagree fail", func(t *testing.T) {
		out, err := verifyV3(t, genuine, "--log-key", w.Log.VKey, "--rpc", "etherlink="+w.ForkURL)
		require.Error(t, err)
		assert.Contains(t, out, "etherlink  FAIL  endpoints: endpoint 1 ("+w.EVMURL+") and endpoint 2 ("+w.ForkURL+") disagree on its block")
		assert.Contains(t, out, "solana     ok")

		// Two endpoints of one node agree.
		out, err = verifyV3(t, genuine, "--log-key", w.Log.VKey, "--rpc", "etherlink="+strings.Replace(w.EVMURL, "127.0.0.1", "localhost", 1))
		require.NoError(t, err, out)
		assert.Contains(t, out, "(2 endpoints agree)")
	})

	t.Run("a tlog-proof beside its file verifies as the receipt does", func(t *testing.T) {
		r, err := receipt.Parse(w.Receipt)
		require.NoError(t, err)
		proof, err := r.TLogProof()
		require.NoError(t, err)
		path := filepath.Join(dir, "contract.txt.tlog-proof")
		require.NoError(t, os.WriteFile(path, []byte(proof), 0o600))
		out, err := verifyV3(t, path, "--log-key", w.Log.VKey)
		require.NoError(t, err, out)
		assert.Contains(t, out, "file       ok    "+original)
		assert.Contains(t, out, "verified on 2 chain(s)")
	})
}
