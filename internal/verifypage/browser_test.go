package verifypage_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/browsertest"
	"github.com/keeperhq/keeper/internal/dev/receipttest"
	"github.com/keeperhq/keeper/internal/verifypage"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
)

const everyV3Check = "checkpoint inclusion size consistency network transaction payload account status finality block"

// TestThePageVerifiesAVersionThreeReceiptOnTheLocalChains has headless
// Chromium run the page, served with the local chains' endpoints, on a
// receipt anchored for real (receipttest.World): the checkpoint's Ed25519
// signature checked by WebCrypto against the pinned key (or the receipt's,
// with a warning), inclusion and consistency proofs, the payload and the
// sending account over JSON-RPC; as JSON or as a tlog-proof. Another key, a
// transaction another account sent and a tampered consistency proof each
// fail at their check; a version 2 receipt still verifies.
func TestThePageVerifiesAVersionThreeReceiptOnTheLocalChains(t *testing.T) {
	browser := browsertest.Start(t) // first: without Chromium there is nothing to start the chains for
	w := receipttest.NewWorld(t)
	genuine, err := receipt.Parse(w.Receipt)
	require.NoError(t, err)
	networks := map[string]string{}
	for _, a := range genuine.Anchors {
		networks[a.Network] = map[string]string{"etherlink": w.EVMURL, "solana": w.SolanaURL}[a.Chain]
	}
	srv := httptest.NewServer(verifypage.Handler(func(context.Context) map[string]string { return networks }))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	file := filepath.Join(dir, "contract.txt")
	require.NoError(t, os.WriteFile(file, []byte(w.File), 0o600))
	write := func(name string, content []byte) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, content, 0o600))
		return p
	}
	forge := func(name string, change func(*receipt.Receipt)) string {
		r, err := receipt.Parse(w.Receipt)
		require.NoError(t, err)
		change(&r)
		raw, err := json.Marshal(r)
		require.NoError(t, err)
		return write(name, raw)
	}
	run := func(t *testing.T, receiptFile, logKey string) browsertest.Outcome {
		t.Helper()
		out := browsertest.Verify(t, browser, browsertest.Run{Page: srv.URL + "/verify", File: file, Receipt: receiptFile, LogKey: logKey})
		t.Logf("result=%s check=%s %s %s", out.Result, out.Check, out.Text, out.Warning)
		for _, c := range out.Chains {
			t.Logf("  %-9s %-4s check=%-11s passed=[%s] %s", c.Chain, c.Result, c.Check, c.Passed, c.Text)
		}
		return out
	}
	receiptFile := write("contract.txt.receipt.json", w.Receipt)

	t.Run("genuine, with the log key pinned", func(t *testing.T) {
		out := run(t, receiptFile, w.Log.VKey)
		assert.Equal(t, "ok", out.Result, out.Text)
		assert.Empty(t, out.Warning)
		for _, chain := range []string{"etherlink", "solana"} {
			result, check, passed := out.Chain(t, chain)
			assert.Equal(t, "ok", result, "%s failed at %s", chain, check)
			assert.Equal(t, everyV3Check, passed, chain)
		}
	})

	t.Run("genuine, without a pinned key, warns", func(t *testing.T) {
		out := run(t, receiptFile, "")
		assert.Equal(t, "ok", out.Result, out.Text)
		assert.Contains(t, out.Warning, "no log key pinned")
	})

	t.Run("another log key fails the checkpoint", func(t *testing.T) {
		other, err := receipttest.NewLog(receipttest.Origin)
		require.NoError(t, err)
		out := run(t, receiptFile, other.VKey)
		assert.Equal(t, "fail", out.Result)
		assert.Equal(t, "checkpoint", out.Check)
		for _, c := range out.Chains {
			assert.Equal(t, "checkpoint", c.Check, c.Chain)
			assert.Contains(t, c.Text, "the checkpoint has no signature by the key keeper.test/log+", c.Chain)
		}
	})

	t.Run("a checkpoint edited after signing fails its signature", func(t *testing.T) {
		out := run(t, forge("edited.json", func(r *receipt.Receipt) {
			r.Log.Checkpoint = strings.Replace(r.Log.Checkpoint, "\n10\n", "\n11\n", 1)
		}), w.Log.VKey)
		assert.Equal(t, "checkpoint", out.Check)
		assert.Contains(t, out.Chains[0].Text, "the checkpoint's signature does not verify with the key keeper.test/log+")
	})

	t.Run("a flipped bit in the inclusion proof fails the inclusion", func(t *testing.T) {
		out := run(t, forge("inclusion.json", func(r *receipt.Receipt) {
			b, _ := hex.DecodeString(r.Log.Inclusion[0])
			b[31] ^= 1
			r.Log.Inclusion[0] = hex.EncodeToString(b)
		}), w.Log.VKey)
		assert.Equal(t, "inclusion", out.Check)
		_, _, passed := out.Chain(t, "etherlink")
		assert.Equal(t, "checkpoint", passed)
	})

	t.Run("a transaction another account sent fails the account", func(t *testing.T) {
		out := run(t, forge("intruder.json", func(r *receipt.Receipt) { r.Anchors[1].TxRef = w.SolanaByIntruder }), w.Log.VKey)
		assert.Equal(t, "account", out.Check)
		result, _, passed := out.Chain(t, "solana")
		assert.Equal(t, "fail", result)
		assert.Equal(t, "checkpoint inclusion size consistency network transaction payload", passed)
		out = run(t, forge("intruder-evm.json", func(r *receipt.Receipt) { r.Anchors[0].TxRef = w.EVMByIntruder }), w.Log.VKey)
		assert.Equal(t, "account", out.Check)
		result, _, _ = out.Chain(t, "solana")
		assert.Equal(t, "ok", result)
	})

	t.Run("a tampered consistency proof fails", func(t *testing.T) {
		out := run(t, forge("consistency.json", func(r *receipt.Receipt) {
			b, _ := hex.DecodeString(r.Anchors[0].Consistency[0])
			b[0] ^= 1
			r.Anchors[0].Consistency[0] = hex.EncodeToString(b)
		}), w.Log.VKey)
		assert.Equal(t, "consistency", out.Check)
		_, _, passed := out.Chain(t, "etherlink")
		assert.Equal(t, "checkpoint inclusion size", passed)
	})

	t.Run("a payload naming another log key fails", func(t *testing.T) {
		out := run(t, forge("other-key.json", func(r *receipt.Receipt) { r.Anchors[0].TxRef = w.EVMOtherKey }), w.Log.VKey)
		assert.Equal(t, "payload", out.Check)
	})

	t.Run("a tlog-proof verifies as the receipt does", func(t *testing.T) {
		proof, err := genuine.TLogProof()
		require.NoError(t, err)
		out := run(t, write("contract.txt.tlog-proof", []byte(proof)), w.Log.VKey)
		assert.Equal(t, "ok", out.Result, out.Text)
		_, _, passed := out.Chain(t, "solana")
		assert.Equal(t, everyV3Check, passed)
	})

	t.Run("a version 2 receipt still verifies", func(t *testing.T) {
		digest := sha256.Sum256([]byte(w.File))
		salt, err := hex.DecodeString(genuine.Salt)
		require.NoError(t, err)
		leaves := [][32]byte{merkle.LeafHash([]byte("a neighbour")), merkle.LeafHash(receipt.Leaf(salt, digest))}
		tree, err := merkle.FromLeafHashes([]merkle.Hash{leaves[0], leaves[1]})
		require.NoError(t, err)
		w.Log.AddBatch(1, leaves)
		row, err := receipttest.AnchorEVM(t.Context(), w.EVMURL, w.KeeperKey, receipt.EVMCalldata(tree.Root()))
		require.NoError(t, err)
		row.Root, row.BatchID, row.LeafIndex, row.BatchSize = tree.Root(), 1, 1, 2
		v2, err := receipt.Build(t.Context(), receipt.Rows{EvidenceID: "ev_v2", Digest: digest, Salt: salt, Anchors: []receipt.AnchorRow{row}}, w.Log)
		require.NoError(t, err)
		require.Equal(t, receipt.VersionSalted, v2.Version)
		raw, err := json.Marshal(v2)
		require.NoError(t, err)
		out := run(t, write("v2.json", raw), "")
		assert.Equal(t, "ok", out.Result, out.Text)
		assert.Empty(t, out.Warning, "a version 2 receipt has no log key to pin")
		_, _, passed := out.Chain(t, "etherlink")
		assert.Equal(t, "proof network transaction payload status finality block", passed)
	})
}
