package receipt_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/dev/receipttest"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
)

const origin = "keeper.example.org/log"

// world is a log of 40 entries with signed checkpoints at sizes 20, 30 and
// 40, an evidence at index 17, and a three-leaf batch from before the log
// holding the same evidence as leaf 1 (batch 7).
type world struct {
	src    *receipttest.Log // proofs from tlog
	vkey   string
	digest [32]byte
	salt   []byte
	notes  map[uint64][]byte
	batch7 [][32]byte
}

const evidenceIndex = 17

func newWorld(t testing.TB) *world {
	src, err := receipttest.NewLog(origin)
	require.NoError(t, err)
	w := &world{src: src, vkey: src.VKey, digest: sha256.Sum256([]byte("the evidence")), salt: bytes.Repeat([]byte{0x5a}, receipt.SaltSize)}
	for i := range 40 {
		entry := sha256.Sum256(fmt.Appendf(nil, "another evidence %d", i))
		if i == evidenceIndex {
			entry = evlog.EntryOf(w.salt, w.digest)
		}
		_, err := src.Append(entry)
		require.NoError(t, err)
		if size := uint64(i + 1); size%10 == 0 && size >= 20 {
			_, err := src.Checkpoint(size)
			require.NoError(t, err)
		}
	}
	w.notes = src.Checkpoints()
	w.batch7 = [][32]byte{
		merkle.LeafHash(receipt.Leaf(bytes.Repeat([]byte{1}, receipt.SaltSize), sha256.Sum256([]byte("neighbour")))),
		merkle.LeafHash(receipt.Leaf(w.salt, w.digest)),
		merkle.LeafHash(receipt.Leaf(bytes.Repeat([]byte{2}, receipt.SaltSize), sha256.Sum256([]byte("another")))),
	}
	src.AddBatch(7, w.batch7)
	return w
}

func (w *world) root(t testing.TB, size uint64) [32]byte {
	root, err := w.src.Root(size)
	require.NoError(t, err)
	return root
}

var blockTime = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func (w *world) checkpointAnchor(t testing.TB, chain string, size uint64) receipt.AnchorRow {
	return receipt.AnchorRow{Chain: chain, Network: chain + ":1", TxRef: chain + "-tx", Block: 100 + size, BlockTime: blockTime,
		BlockHash: chain + "-block", Finality: "finalized", Account: chain + "-account", LogSize: size, Root: w.root(t, size)}
}

func (w *world) batchAnchor(t testing.TB, chain string) receipt.AnchorRow {
	tree, err := merkle.FromLeafHashes(hashesOf(w.batch7))
	require.NoError(t, err)
	return receipt.AnchorRow{Chain: chain, Network: chain + ":1", TxRef: chain + "-batch-tx", Block: 9, BlockTime: blockTime,
		BlockHash: chain + "-old-block", Finality: "finalized", Account: chain + "-account", Root: tree.Root(), BatchID: 7, LeafIndex: 1, BatchSize: 3}
}

func (w *world) rows(anchors ...receipt.AnchorRow) receipt.Rows {
	return receipt.Rows{EvidenceID: "ev_1", Digest: w.digest, Salt: w.salt, LogIndex: evidenceIndex, InLog: true,
		LogOrigin: origin, LogKey: w.vkey, Anchors: anchors, Checkpoints: w.notes}
}

func hashesOf(in [][32]byte) []merkle.Hash {
	out := make([]merkle.Hash, len(in))
	for i, h := range in {
		out[i] = h
	}
	return out
}

func tlogHashes(t testing.TB, hexes []string) []tlog.Hash {
	out := make([]tlog.Hash, len(hexes))
	for i, s := range hexes {
		b, err := hex.DecodeString(s)
		require.NoError(t, err)
		copy(out[i][:], b)
	}
	return out
}

func TestBuildProvesTheEntryInTheLargestAnchoredCheckpointAndEachAnchorConsistentWithIt(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	later := w.checkpointAnchor(t, "solana", 30)
	later.BlockTime = blockTime.Add(90 * time.Second)
	r, err := receipt.Build(ctx, w.rows(w.checkpointAnchor(t, "etherlink", 20), later), w.src)
	require.NoError(t, err)

	require.Equal(t, receipt.Version, r.Version)
	assert.Equal(t, blockTime, r.ExistedBy, "the evidence existed no later than its earliest anchor's block time")
	require.NotNil(t, r.Log)
	assert.Equal(t, origin, r.Log.Origin)
	assert.Equal(t, w.vkey, r.Log.Key)
	assert.Equal(t, uint64(evidenceIndex), r.Log.Index)
	assert.Equal(t, string(w.notes[30]), r.Log.Checkpoint, "the largest anchored checkpoint, not the log's newest (40)")

	// tlog, code keeper does not own, accepts the inclusion proof and each
	// consistency proof.
	key, err := evlog.ParseKey(w.vkey)
	require.NoError(t, err)
	head, err := key.Open([]byte(r.Log.Checkpoint))
	require.NoError(t, err)
	entry, err := r.Entry()
	require.NoError(t, err)
	require.NoError(t, tlog.CheckRecord(tlogHashes(t, r.Log.Inclusion), int64(head.Size), head.Root, evidenceIndex, tlog.RecordHash(entry[:])))
	require.NoError(t, r.CheckInclusion(head))
	for _, a := range r.Anchors {
		assert.Equal(t, receipt.AnchorCheckpoint, a.Kind)
		root, err := a.RootBytes()
		require.NoError(t, err)
		if a.TreeSize == 30 {
			assert.Empty(t, a.Consistency, "the anchor of the receipt's own checkpoint needs no consistency proof")
		} else {
			require.NoError(t, tlog.CheckTree(tlogHashes(t, a.Consistency), int64(head.Size), head.Root, int64(a.TreeSize), root))
		}
		require.NoError(t, a.CheckConsistency(head), a.Chain)
		assert.Equal(t, a.Chain+"-account", a.Account)
	}

	// Written and read back, the receipt is the same, and its checkpoint
	// anchors carry no batch fields.
	raw, err := json.Marshal(r)
	require.NoError(t, err)
	back, err := receipt.Parse(raw)
	require.NoError(t, err)
	assert.Equal(t, r, back)
	var generic struct {
		Anchors []map[string]any `json:"anchors"`
	}
	require.NoError(t, json.Unmarshal(raw, &generic))
	assert.NotContains(t, generic.Anchors[0], "leaf_index")
	assert.NotContains(t, generic.Anchors[0], "path")
	assert.Equal(t, []any{}, generic.Anchors[1]["consistency"])
	assert.Equal(t, "checkpoint", generic.Anchors[1]["kind"])
}

func TestBuildKeepsAnAnchorFromBeforeTheLogAsABatchAnchor(t *testing.T) {
	w := newWorld(t)
	r, err := receipt.Build(context.Background(), w.rows(w.batchAnchor(t, "etherlink"), w.checkpointAnchor(t, "solana", 20)), w.src)
	require.NoError(t, err)
	require.Equal(t, receipt.Version, r.Version)
	old := r.Anchors[0]
	assert.Equal(t, receipt.AnchorBatch, old.Kind)
	assert.Equal(t, 1, old.LeafIndex)
	assert.Equal(t, 3, old.TreeSize)
	assert.Equal(t, "etherlink-account", old.Account)
	require.NoError(t, r.CheckProof(old), "proved as in version 2: the leaf salt ‖ digest in its batch's tree")
	assert.Equal(t, string(w.notes[20]), r.Log.Checkpoint)

	raw, err := json.Marshal(r)
	require.NoError(t, err)
	back, err := receipt.Parse(raw)
	require.NoError(t, err)
	assert.Equal(t, r, back)
}

func TestBuildIssuesVersionTwoWithoutCheckpointAnchorsAndVersionOneWithoutASalt(t *testing.T) {
	w := newWorld(t)
	ctx := context.Background()
	rows := w.rows(w.batchAnchor(t, "etherlink"))
	rows.InLog = false
	r, err := receipt.Build(ctx, rows, w.src)
	require.NoError(t, err)
	assert.Equal(t, receipt.VersionSalted, r.Version)
	assert.Nil(t, r.Log)
	assert.Empty(t, r.Anchors[0].Kind)
	assert.Empty(t, r.Anchors[0].Account, "version 2 names no account")
	require.NoError(t, r.CheckProof(r.Anchors[0]))
	raw, err := json.Marshal(r)
	require.NoError(t, err)
	assert.JSONEq(t, `{"version":2,"evidence_id":"ev_1","digest":"`+hex.EncodeToString(w.digest[:])+`","salt":"`+hex.EncodeToString(w.salt)+`",
		"tree":"rfc6962-sha256","anchors":[{"chain":"etherlink","network":"etherlink:1","leaf_index":1,"tree_size":3,
		"path":`+mustJSON(t, r.Anchors[0].Path)+`,"root":"`+r.Anchors[0].Root+`","tx_ref":"etherlink-batch-tx","block":9,
		"block_hash":"etherlink-old-block","block_time":"2026-03-01T12:00:00Z","finality":"finalized"}]}`, string(raw),
		"version 2 is written as it always was")

	// Before salts the leaf is the bare digest.
	leaves8 := [][32]byte{merkle.LeafHash([]byte("x")), merkle.LeafHash(w.digest[:])}
	w.src.AddBatch(8, leaves8)
	tree, err := merkle.FromLeafHashes(hashesOf(leaves8))
	require.NoError(t, err)
	rows = receipt.Rows{EvidenceID: "ev_0", Digest: w.digest, Anchors: []receipt.AnchorRow{{Chain: "etherlink", Network: "eip155:1",
		TxRef: "0x1", Block: 3, BlockHash: "0xb", Finality: "finalized", Root: tree.Root(), BatchID: 8, LeafIndex: 1, BatchSize: 2}}}
	r, err = receipt.Build(ctx, rows, w.src)
	require.NoError(t, err)
	assert.Equal(t, receipt.VersionUnsalted, r.Version)
	assert.Empty(t, r.Anchors[0].Network, "version 1 names no network")
	require.NoError(t, r.CheckProof(r.Anchors[0]))
	raw, err = json.Marshal(r)
	require.NoError(t, err)
	_, err = receipt.Parse(raw)
	require.NoError(t, err)
}

func mustJSON(t *testing.T, v any) string {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestBuildRefusesRowsThatWouldMakeAReceiptThatDoesNotVerify: each store
// inconsistency is an error naming it, never a receipt.
func TestBuildRefusesRowsThatWouldMakeAReceiptThatDoesNotVerify(t *testing.T) {
	w := newWorld(t)
	otherSkey, _, err := evlog.GenerateKey(origin)
	require.NoError(t, err)
	other, err := evlog.NewSigner(otherSkey, origin)
	require.NoError(t, err)
	cases := map[string]struct {
		change func(*receipt.Rows)
		want   string
	}{
		"no anchors":           {func(r *receipt.Rows) { r.Anchors = nil }, "no anchors"},
		"no checkpoint stored": {func(r *receipt.Rows) { r.Checkpoints = map[uint64][]byte{20: w.notes[20]} }, "no signed checkpoint of size 30"},
		"checkpoint by other key": {func(r *receipt.Rows) {
			r.Checkpoints = map[uint64][]byte{30: mustSign(t, other, w.root(t, 30), 30)}
		}, "signature"},
		"checkpoint of other size": {func(r *receipt.Rows) { r.Checkpoints = map[uint64][]byte{30: w.notes[40]} },
			"the checkpoint stored for size 30 is of size 40"},
		"an anchored root off the log": {func(r *receipt.Rows) { r.Anchors[0].Root[0] ^= 1 }, "its checkpoint (size 20"},
		"an anchor before the entry": {func(r *receipt.Rows) {
			r.Anchors[0] = w.checkpointAnchor(t, "etherlink", 10)
		}, "committed to size 10, which does not hold log index 17"},
		"another entry": {func(r *receipt.Rows) { r.Digest[0] ^= 1 }, "inclusion proof of 17 in 30"},
		"no log index":  {func(r *receipt.Rows) { r.InLog = false }, "no log index"},
		"a batch of other size": {func(r *receipt.Rows) {
			r.Anchors = append(r.Anchors, w.batchAnchor(t, "tezos"))
			r.Anchors[2].BatchSize = 4
		}, "batch 7 has 3 leaves"},
		"a batch root off its leaves": {func(r *receipt.Rows) {
			r.Anchors = append(r.Anchors, w.batchAnchor(t, "tezos"))
			r.Anchors[2].Root[5] ^= 1
		}, "batch 7's leaves hash to root"},
		"the evidence at another leaf": {func(r *receipt.Rows) {
			r.Anchors = append(r.Anchors, w.batchAnchor(t, "tezos"))
			r.Anchors[2].LeafIndex = 2
		}, "not the leaf its index names"},
		"a checkpoint anchor without a salt": {func(r *receipt.Rows) { r.Salt = nil }, "without a salt"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			rows := w.rows(w.checkpointAnchor(t, "etherlink", 20), w.checkpointAnchor(t, "solana", 30))
			c.change(&rows)
			_, err := receipt.Build(context.Background(), rows, w.src)
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "receipt of "+rows.EvidenceID)
		})
	}
}

func mustSign(t *testing.T, s *evlog.Signer, root [32]byte, size uint64) []byte {
	note, err := s.Sign(evlog.Checkpoint{Origin: origin, Size: size, Root: root})
	require.NoError(t, err)
	return note
}

func TestParseReadsAVersionThreeAnchorWithoutKindAsACheckpointAnchorAndRefusesMixedShapes(t *testing.T) {
	w := newWorld(t)
	genuine, err := receipt.Build(context.Background(), w.rows(w.checkpointAnchor(t, "etherlink", 20), w.batchAnchor(t, "solana")), w.src)
	require.NoError(t, err)
	edit := func(change func(m map[string]any)) []byte {
		raw, err := json.Marshal(genuine)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		change(m)
		raw, err = json.Marshal(m)
		require.NoError(t, err)
		return raw
	}
	anchor := func(m map[string]any, i int) map[string]any { return m["anchors"].([]any)[i].(map[string]any) }

	r, err := receipt.Parse(edit(func(m map[string]any) { delete(anchor(m, 0), "kind") }))
	require.NoError(t, err)
	assert.Equal(t, receipt.AnchorCheckpoint, r.Anchors[0].Kind)

	bad := map[string]func(m map[string]any){
		"no log": func(m map[string]any) { delete(m, "log") },
		"a log in version 2": func(m map[string]any) {
			m["version"] = 2
			m["anchors"] = []any{anchor(m, 1)}
			delete(anchor(m, 0), "kind")
			delete(anchor(m, 0), "account")
		},
		"an account in version 2": func(m map[string]any) {
			m["version"] = 2
			delete(m, "log")
			m["anchors"] = []any{anchor(m, 1)}
			delete(anchor(m, 0), "kind")
		},
		"an unknown kind":              func(m map[string]any) { anchor(m, 0)["kind"] = "witness" },
		"a path on a checkpoint":       func(m map[string]any) { anchor(m, 0)["path"] = []any{} },
		"a zero tree size":             func(m map[string]any) { anchor(m, 0)["tree_size"] = 0 },
		"a consistency on a batch":     func(m map[string]any) { anchor(m, 1)["consistency"] = []any{} },
		"an inclusion hash not in hex": func(m map[string]any) { m["log"].(map[string]any)["inclusion"] = []any{"zz"} },
		"a key that is not a key":      func(m map[string]any) { m["log"].(map[string]any)["key"] = "keeper.example.org/log+1234" },
		"an origin with a scheme":      func(m map[string]any) { m["log"].(map[string]any)["origin"] = "https://" + origin },
		"no network":                   func(m map[string]any) { delete(anchor(m, 0), "network") },
	}
	for name, change := range bad {
		_, err := receipt.Parse(edit(change))
		assert.Error(t, err, name)
	}
	// The unchanged receipt still parses (the edits above worked on copies).
	_, err = receipt.Parse(edit(func(map[string]any) {}))
	require.NoError(t, err)
}
