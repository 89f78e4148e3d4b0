package testsuite

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
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/dev/browsertest"
	"github.com/keeperhq/keeper/internal/dev/conformance"
	"github.com/keeperhq/keeper/internal/dev/receipttest"
	"github.com/keeperhq/keeper/internal/verifypage"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// batchForgery is the batch-after-log attack (docs/trust.md, One definition,
// and what stops each attack), for real on the local EVM chain over
// its JSON-RPC: from keeper's own listed account, calldata "keeper:v1:" ‖
// SHA-256(0x00 ‖ digest) for a digest that was never in the log, sent
// after the log began, and the version 1 receipt it makes; beside it a
// genuine version 1 receipt anchored before the log began.
type batchForgery struct {
	w                *receipttest.World
	root             []byte // the trust root: the log began between the two anchors
	genuine, forged  []byte // the two version 1 receipts
	forgedRow        receipt.AnchorRow
	wantCheck, audit string // what the corpus says of the attack
}

func newBatchForgery(t *testing.T) *batchForgery {
	ctx := t.Context()
	f := &batchForgery{w: receipttest.NewWorld(t)}
	var v1 conformance.Vector
	vectors, err := conformance.Load(conformance.Dir())
	require.NoError(t, err)
	for _, v := range vectors {
		r, err := receipt.Parse([]byte(v.Receipt))
		if v.Class == "batch-after-log" && err == nil && r.Version == receipt.VersionUnsalted {
			v1 = v
		}
	}
	require.NotEmpty(t, v1.Name, "the corpus has a version 1 batch-after-log vector")
	f.wantCheck, f.audit = v1.Expect.Verifier.Check, v1.Expect.Audit.Finding

	before := sha256.Sum256([]byte("minutes taken before the log began"))
	row, err := receipttest.AnchorEVM(ctx, f.w.EVMURL, f.w.KeeperKey, receipt.EVMCalldata(v1Root(before)))
	require.NoError(t, err)
	f.genuine = v1Receipt(t, "ev_before", before, row)

	began := row.BlockTime.Add(time.Second)
	root, err := trust.New(f.w.Log.VKey, began)
	require.NoError(t, err)
	root.List("etherlink", receipt.LocalEVMNetwork, f.w.Keeper.Hex(), 0, row.BlockTime)
	f.root = root.Marshal()

	never := sha256.Sum256([]byte("a digest that was never in the log"))
	for {
		f.forgedRow, err = receipttest.AnchorEVM(ctx, f.w.EVMURL, f.w.KeeperKey, receipt.EVMCalldata(v1Root(never)))
		require.NoError(t, err)
		if !f.forgedRow.BlockTime.Before(began) {
			break // the local chain's blocks are a second or so apart: the next one is after the log began
		}
	}
	f.forged = v1Receipt(t, "ev_never", never, f.forgedRow)
	return f
}

// v1Root is the root of a one-leaf version 1 tree: the leaf is the bare
// digest, so the root is SHA-256(0x00 ‖ digest).
func v1Root(digest [32]byte) [32]byte {
	return [32]byte(merkle.LeafHash(digest[:]))
}

func v1Receipt(t *testing.T, id string, digest [32]byte, row receipt.AnchorRow) []byte {
	root := v1Root(digest)
	r := receipt.Receipt{Version: receipt.VersionUnsalted, EvidenceID: id, Digest: hex.EncodeToString(digest[:]), Tree: receipt.TreeRFC6962,
		Anchors: []receipt.Anchor{{Chain: "etherlink", LeafIndex: 0, TreeSize: 1, Path: []string{}, Root: hex.EncodeToString(root[:]),
			TxRef: row.TxRef, Block: row.Block, BlockTime: row.BlockTime}},
		ExistedBy: row.BlockTime}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	_, err = receipt.Parse(b)
	require.NoError(t, err)
	return b
}

// TestAVersionOneReceiptForADigestNeverInTheLogFailsEveryVerifier: the Go
// package, `keeper verify` and the /verify page in Chromium refuse the
// forged receipt at the check the corpus names, and take the genuine
// pre-log one.
func TestAVersionOneReceiptForADigestNeverInTheLogFailsEveryVerifier(t *testing.T) {
	endToEnd(t)
	browser := browsertest.Start(t)
	f := newBatchForgery(t)
	o := verify.Options{Endpoints: map[string][]string{"etherlink": {f.w.EVMURL}}, Clocks: []string{"etherlink"}}

	rep := verify.Verify(context.Background(), verify.Input{Receipt: f.genuine, Trust: f.root}, o)
	require.True(t, rep.OK, "the genuine pre-log receipt: %s: %s", rep.Check, rep.Reason)
	assert.False(t, rep.ExistedBy.IsZero())
	rep = verify.Verify(context.Background(), verify.Input{Receipt: f.forged, Trust: f.root}, o)
	require.False(t, rep.OK, "the forged receipt verified: %s", rep.Summary())
	assert.Equal(t, f.wantCheck, rep.Check, rep.Reason)

	dir := t.TempDir()
	run := func(receiptJSON []byte) (string, error) {
		path := filepath.Join(dir, "ev_000000000000000000000000.receipt.json")
		require.NoError(t, os.WriteFile(path, receiptJSON, 0o600))
		trustPath := filepath.Join(dir, "trust.json")
		require.NoError(t, os.WriteFile(trustPath, f.root, 0o600))
		root := cli.Root(nil)
		var out strings.Builder
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs([]string{"verify", path, "--trust", trustPath, "--rpc", "etherlink=" + f.w.EVMURL, "--rpc-only", "--clock", "etherlink"})
		err := root.Execute()
		return out.String(), err
	}
	out, err := run(f.genuine)
	require.NoError(t, err, out)
	assert.Contains(t, out, "existed no later than")
	out, err = run(f.forged)
	require.Error(t, err, out)
	assert.Contains(t, out, "FAIL  "+f.wantCheck+":")

	srv := httptest.NewServer(verifypage.Handler(func(context.Context) map[string]string { return nil }))
	t.Cleanup(srv.Close)
	trustPath := filepath.Join(dir, "trust.json")
	page := func(name string, receiptJSON []byte) browsertest.Outcome {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, receiptJSON, 0o600))
		return browsertest.Verify(t, browser, browsertest.Run{Page: srv.URL + "/verify", Receipt: path, Trust: trustPath,
			Clocks: receipt.LocalEVMNetwork, Endpoints: map[string]string{"etherlink": f.w.EVMURL}})
	}
	genuine := page("genuine.receipt.json", f.genuine)
	assert.Equal(t, "ok", genuine.Result, genuine.Text)
	assert.Contains(t, genuine.Bound, "existed no later than")
	forged := page("forged.receipt.json", f.forged)
	assert.Equal(t, "fail", forged.Result, forged.Text)
	assert.Equal(t, f.wantCheck, forged.Check, forged.Text)
}
