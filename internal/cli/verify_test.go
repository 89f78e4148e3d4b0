package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"github.com/keeperhq/keeper/evlog/trust"
	"golang.org/x/mod/sumdb/note"
	"os"
	"path/filepath"
	"slices"
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

// fakeAccount is the account that sends fakeChain's transactions, unless
// a transaction names another; fakeTime is their blocks' time.
const fakeAccount = "0x00000000000000000000000000000000000FeeD0"

var fakeTime = time.Unix(1700000000, 0).UTC()

// fakeChain answers lookups from a table of transactions, as a chain on
// network "fake:1" would.
func fakeChain(txs map[string]verify.Tx) verify.Lookup {
	return func(ctx context.Context, rpcURL, ref string) (verify.Tx, error) {
		v, ok := txs[ref]
		if !ok {
			return verify.Tx{Network: "fake:1"}, nil
		}
		v.Network = "fake:1"
		if v.Sender == "" {
			v.Sender = fakeAccount
		}
		if v.BlockTime.IsZero() {
			v.BlockTime = fakeTime
		}
		return v, nil
	}
}

// fakeTrust writes the trust root of fakeChain's log: it began an hour
// after fakeTime, so genuineReceipt's batch anchor predates it, and lists
// fakeAccount on "fake:1" from size 0.
func fakeTrust(t *testing.T) string {
	t.Helper()
	_, vkey, err := note.GenerateKey(rand.Reader, "fake.example/log")
	require.NoError(t, err)
	root, err := trust.New(vkey, fakeTime.Add(time.Hour))
	require.NoError(t, err)
	root.List("fake", "fake:1", fakeAccount, 0, fakeTime)
	path := filepath.Join(t.TempDir(), "trust.json")
	require.NoError(t, os.WriteFile(path, root.Marshal(), 0o600))
	return path
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
			BlockTime: fakeTime}},
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
	if !slices.Contains(flags, "--insecure-trust-receipt") && !slices.Contains(flags, "--account") && !slices.Contains(flags, "--trust") {
		flags = append(flags, "--trust", fakeTrust(t), "--clock", "fake:1")
	}
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
		"intruder": {Found: true, Succeeded: true, Final: true, Root: root, Block: 42, BlockHash: "0xb42",
			Sender: "0x000000000000000000000000000000000000dEaD"},
	})
	defer delete(lookups, "fake")

	original := filepath.Join(t.TempDir(), "original.txt")
	require.NoError(t, os.WriteFile(original, []byte(theFile), 0o600))
	out, err := runVerify(t, r, "--file", original)
	require.NoError(t, err, out)
	assert.Contains(t, out, "file       ok")
	assert.Contains(t, out, "fake       ok    fake:1 (a test network) tx tx-1, block 42 at 2023-11-14T22:13:20Z (chain time), final, sent by "+fakeAccount)
	assert.Contains(t, out, "trust      pinned by --trust ")
	assert.Contains(t, out, "accounts   fake:1:"+fakeAccount+" (sizes 0–…)\n")
	assert.Contains(t, out, "verified on 1 network(s): fake:1 (a test network); existed no later than 2023-11-14T22:13:20Z (chain time; trusted clocks: fake:1)")

	// Under the short form, which says not when the log began, a batch
	// anchor does not count: a leaked key could otherwise date anything.
	out, err = runVerify(t, r, "--account", "fake="+fakeAccount)
	require.Error(t, err)
	assert.Contains(t, out, "FAIL  batch: ")

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
		{"another block time", func(r *receipt.Receipt) { r.Anchors[0].BlockTime = fakeTime.Add(time.Second) }, "time: block 42's time on fake:1 is 2023-11-14T22:13:20Z"},
		{"a tx another account sent", func(r *receipt.Receipt) { r.Anchors[0].TxRef = "intruder" }, "account: transaction intruder: 0x000000000000000000000000000000000000dEaD sent an anchor on fake:1"},
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
	assert.Contains(t, out, "verified on 1 network(s)")

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
// (receipttest.World): pinned by a trust file (JSON or signed as /log/trust
// serves it) or by --log-key and --account (the key by flag, file or
// environment); refused with nothing pinned unless
// --insecure-trust-receipt, which every line then names; as JSON or as a
// tlog-proof.
func TestVerifyOfAVersionThreeReceiptOnTheLocalChains(t *testing.T) {
	w := receipttest.NewWorld(t)
	f := w.Forgeries(t)
	t.Setenv(LogKeyEnv, "")
	dir := t.TempDir()
	original := filepath.Join(dir, "contract.txt")
	require.NoError(t, os.WriteFile(original, []byte(w.File), 0o600))
	genuine := filepath.Join(dir, "contract.txt.receipt.json")
	require.NoError(t, os.WriteFile(genuine, w.Receipt, 0o600))
	trustFile := filepath.Join(dir, "trust.json")
	require.NoError(t, os.WriteFile(trustFile, f.Trust, 0o600))
	trustNote := filepath.Join(dir, "trust.note")
	require.NoError(t, os.WriteFile(trustNote, f.TrustNote, 0o600))
	accounts := []string{"--account", "etherlink=" + w.Keeper.Hex(), "--account", "solana=" + w.SolanaKeeper}
	// The local chains are test networks: their clocks bound the time only
	// when trusted.
	clocks := []string{"--clock", "etherlink", "--clock", "solana"}
	rpc := []string{"--rpc", "etherlink=" + w.EVMURL, "--rpc", "solana=" + w.SolanaURL}
	verifyV3 := func(t *testing.T, path string, flags ...string) (string, error) {
		t.Helper()
		return runKeeper(t, append(append([]string{"verify", path}, rpc...), flags...)...)
	}
	r, err := receipt.Parse(w.Receipt)
	require.NoError(t, err)
	existedBy := r.ExistedBy.UTC().Format(time.RFC3339)

	t.Run("a genuine receipt verifies against the pinned trust root, with its chain time", func(t *testing.T) {
		for _, file := range []string{trustFile, trustNote} {
			out, err := verifyV3(t, genuine, append([]string{"--trust", file}, clocks...)...)
			require.NoError(t, err, out)
			assert.Contains(t, out, "(receipt version 3)")
			assert.Contains(t, out, "file       ok    "+original)
			assert.Contains(t, out, "log key    "+w.Log.VKey+" (origin "+receipttest.Origin+", key hash ")
			assert.Contains(t, out, "pinned by --trust "+file)
			assert.Contains(t, out, "etherlink  ok    "+verify.DescribeNetwork(receipt.LocalEVMNetwork)+" tx ")
			assert.Regexp(t, `solana     ok    solana:\w+ \(a test Solana cluster\) tx \w+, block \d+ at \S+ \(chain time\)`, out)
			assert.Contains(t, out, "sent by "+w.Keeper.Hex())
			assert.Contains(t, out, "verified on 2 network(s): "+verify.DescribeNetwork(receipt.LocalEVMNetwork)+", solana:")
			assert.Contains(t, out, "existed no later than "+existedBy+" (chain time; trusted clocks: ")
			assert.NotContains(t, out, "INSECURE")
		}
	})

	t.Run("the short form pins the key by flag, file or environment, and the accounts", func(t *testing.T) {
		out, err := verifyV3(t, genuine, append([]string{"--log-key", w.Log.VKey}, accounts...)...)
		require.NoError(t, err, out)
		assert.Contains(t, out, "log key    "+w.Log.VKey)
		assert.Contains(t, out, "accounts   etherlink="+w.Keeper.Hex()+" (any size, pinned by --account)")

		keyFile := filepath.Join(t.TempDir(), "log.vkey")
		require.NoError(t, os.WriteFile(keyFile, []byte(w.Log.VKey+"\n"), 0o600))
		out, err = verifyV3(t, genuine, append([]string{"--log-key", keyFile}, accounts...)...)
		require.NoError(t, err, out)

		t.Setenv(LogKeyEnv, w.Log.VKey)
		out, err = verifyV3(t, genuine, accounts...)
		require.NoError(t, err, out)

		// The key alone pins no account: every anchor fails.
		out, err = verifyV3(t, genuine)
		require.Error(t, err)
		assert.Contains(t, out, "etherlink  FAIL  account: ")
		assert.Contains(t, out, "lists no anchoring account")
	})

	t.Run("with nothing pinned it fails and says how to pin", func(t *testing.T) {
		out, err := verifyV3(t, genuine)
		require.Error(t, err)
		assert.Equal(t, howToPin, err.Error())
		assert.NotContains(t, out, "verified")
	})

	t.Run("--insecure-trust-receipt checks the receipt against itself, and every line says so", func(t *testing.T) {
		out, err := verifyV3(t, genuine, "--insecure-trust-receipt")
		require.NoError(t, err, out)
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			assert.True(t, strings.HasPrefix(line, "INSECURE "), line)
		}
		assert.Contains(t, out, "log key    "+w.Log.VKey)
		assert.Contains(t, out, "verified on 2 network(s)")
	})

	t.Run("another log's key fails every anchor", func(t *testing.T) {
		other, err := receipttest.NewLog(receipttest.Origin)
		require.NoError(t, err)
		out, err := verifyV3(t, genuine, append([]string{"--log-key", other.VKey}, accounts...)...)
		require.Error(t, err)
		assert.Contains(t, out, "log key    "+other.VKey)
		assert.Contains(t, out, "etherlink  FAIL  checkpoint: ")
		assert.Contains(t, out, "solana     FAIL  checkpoint: ")
	})

	t.Run("bad pins are refused in one line", func(t *testing.T) {
		_, err := verifyV3(t, genuine, "--log-key", "PRIVATE+KEY+keeper.test/log+0000+secret")
		require.Error(t, err)
		assert.Equal(t, "--log-key: neither a log key (ORIGIN+HASH+KEY, as /log/key serves it) nor a readable file holding one", err.Error())
		_, err = verifyV3(t, genuine, "--log-key", w.Log.VKey, "--account", "0xabc")
		require.Error(t, err)
		assert.Contains(t, err.Error(), `--account: trust: account "0xabc": write CHAIN=ADDRESS`)
		other, err := receipttest.NewLog(receipttest.Origin)
		require.NoError(t, err)
		_, err = verifyV3(t, genuine, "--trust", trustNote, "--log-key", other.VKey)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "is not the pinned log key")
		_, err = verifyV3(t, genuine, "--trust", filepath.Join(dir, "missing.json"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "--trust: cannot read")
	})

	t.Run("two endpoints that disagree fail", func(t *testing.T) {
		out, err := verifyV3(t, genuine, "--trust", trustFile, "--rpc", "etherlink="+w.ForkURL)
		require.Error(t, err)
		assert.Contains(t, out, "etherlink  FAIL  endpoints: endpoint 1 ("+w.EVMURL+") and endpoint 2 ("+w.ForkURL+") disagree on its block")
		assert.Contains(t, out, "solana     ok")

		// Two endpoints of one node agree.
		out, err = verifyV3(t, genuine, "--trust", trustFile, "--rpc", "etherlink="+strings.Replace(w.EVMURL, "127.0.0.1", "localhost", 1))
		require.NoError(t, err, out)
		assert.Contains(t, out, "(2 endpoints agree)")
	})

	t.Run("a tlog-proof beside its file verifies as the receipt does", func(t *testing.T) {
		proof, err := r.TLogProof()
		require.NoError(t, err)
		path := filepath.Join(dir, "contract.txt.tlog-proof")
		require.NoError(t, os.WriteFile(path, []byte(proof), 0o600))
		out, err := verifyV3(t, path, append([]string{"--trust", trustFile}, clocks...)...)
		require.NoError(t, err, out)
		assert.Contains(t, out, "file       ok    "+original)
		assert.Contains(t, out, "existed no later than "+existedBy)
	})

	// receipttest's forgeries, each run through `keeper verify` with what
	// the verifier is given: every one fails at its check, the genuine
	// receipt and one listing an anchor twice verify, on 2 networks.
	for _, c := range f.Cases {
		t.Run(c.Name, func(t *testing.T) {
			d := t.TempDir()
			path := filepath.Join(d, "receipt.json")
			require.NoError(t, os.WriteFile(path, c.Receipt, 0o600))
			args := []string{"verify", path}
			for chain, urls := range c.Endpoints {
				for _, u := range urls {
					args = append(args, "--rpc", chain+"="+u)
				}
			}
			if c.Trust != nil {
				require.NoError(t, os.WriteFile(filepath.Join(d, "trust.json"), c.Trust, 0o600))
				args = append(args, "--trust", filepath.Join(d, "trust.json"))
			}
			out, err := runKeeper(t, args...)
			if c.Check == "" {
				require.NoError(t, err, out)
				assert.Contains(t, out, fmt.Sprintf("verified on %d network(s)", c.Networks))
				return
			}
			require.Error(t, err, out)
			if c.Check == verify.CheckTrust {
				assert.Equal(t, howToPin, err.Error())
				return
			}
			chain := c.Chain
			if chain == "" {
				chain = "etherlink"
			}
			assert.Regexp(t, fmt.Sprintf(`%-10s FAIL  %s: `, chain, c.Check), out)
		})
	}
}
