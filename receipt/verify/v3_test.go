package verify_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/receipttest"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// world is receipttest's World, read as a verifier would.
type world struct{ *receipttest.World }

func newV3World(t *testing.T) world { return world{receipttest.NewWorld(t)} }

func (w world) receipt(t *testing.T) receipt.Receipt {
	t.Helper()
	r, err := receipt.Parse(w.Receipt)
	require.NoError(t, err)
	return r
}

// options pin the log's key and keeper's two accounts (the short form).
func (w world) options() verify.Options {
	return verify.Options{RPC: map[string]string{"etherlink": w.EVMURL, "solana": w.SolanaURL}, LogKey: w.Log.VKey,
		Accounts: []string{"etherlink=" + w.Keeper.Hex(), "solana=" + w.SolanaKeeper}}
}

func flipHex(s string) string {
	b, _ := hex.DecodeString(s)
	b[len(b)-1] ^= 1
	return hex.EncodeToString(b)
}

func TestAVersionThreeReceiptVerifiesAgainstThePinnedKeyAndBothChains(t *testing.T) {
	w := newV3World(t)
	ctx := context.Background()
	r := w.receipt(t)
	require.NoError(t, verify.File(r, strings.NewReader(w.File)))

	res := verify.Receipt(ctx, r, w.options())
	require.Len(t, res, 2)
	for _, x := range res {
		require.True(t, x.OK, "%s: %s", x.Chain, x.Failed())
		assert.Empty(t, x.Warning, "the key was pinned")
	}
	assert.Contains(t, res[0].Detail, "sent by "+w.Keeper.Hex())
	assert.Contains(t, res[0].Detail, "commits to checkpoint 6, which the receipt's (10) extends")

	for _, x := range res {
		assert.Equal(t, w.Log.VKey, x.Key, "the full key checked against")
		assert.False(t, x.Time.IsZero())
		assert.Contains(t, x.Detail, x.Time.UTC().Format(time.RFC3339)+" (chain time)")
	}
	rep := verify.Check(ctx, r, w.options())
	require.True(t, rep.OK)
	assert.True(t, rep.ExistedBy.IsZero(), "the local chains are no clock this verifier trusts by default")
	assert.Equal(t, r.ExistedBy, rep.Claimed)
	assert.Contains(t, rep.Summary(), "no time bound")

	clocked := w.options()
	clocked.Clocks = []string{receipt.LocalEVMNetwork, "solana"}
	rep = verify.Check(ctx, r, clocked)
	require.True(t, rep.OK)
	assert.Equal(t, r.ExistedBy, rep.ExistedBy, "the receipt's existed_by is its earliest anchor's chain time")
	assert.Len(t, rep.Clocks, 2, "both networks' clocks stand behind the bound")
	assert.Equal(t, w.Log.VKey, rep.Key)
	assert.Contains(t, rep.Summary(), "verified on 2 network(s)")
	assert.Contains(t, rep.Summary(), "existed no later than "+r.ExistedBy.UTC().Format(time.RFC3339))

	// With nothing pinned, nothing verifies.
	o := w.options()
	o.LogKey, o.Accounts = "", nil
	for _, x := range verify.Receipt(ctx, r, o) {
		assert.False(t, x.OK)
		assert.Equal(t, verify.CheckTrust, x.Check, x.Failed())
	}
	// Only the explicit option checks the receipt against itself, and
	// every result says so.
	o.InsecureTrustReceipt = true
	for _, x := range verify.Receipt(ctx, r, o) {
		assert.True(t, x.OK, x.Failed())
		assert.Equal(t, verify.InsecureWarning, x.Warning)
	}
	assert.Contains(t, verify.Check(ctx, r, o).Summary(), "INSECURE")

	// A key pinned without accounts verifies no anchor.
	o = w.options()
	o.Accounts = nil
	for _, x := range verify.Receipt(ctx, r, o) {
		assert.Equal(t, verify.CheckAccount, x.Check, x.Failed())
		assert.Contains(t, x.Reason, "lists no anchoring account")
	}

	// Several endpoints that agree: two spellings of the same node.
	o = w.options()
	o.Endpoints = map[string][]string{"etherlink": {strings.Replace(w.EVMURL, "127.0.0.1", "localhost", 1)}}
	res = verify.Receipt(ctx, r, o)
	require.True(t, res[0].OK, res[0].Failed())
	assert.Contains(t, res[0].Detail, "(2 endpoints agree)")
}

func TestAVersionThreeReceiptFailsAtTheCheckThatCatchesEachForgery(t *testing.T) {
	w := newV3World(t)
	ctx := context.Background()
	another, err := receipttest.NewLog(receipttest.Origin)
	require.NoError(t, err)
	otherOrigin, err := receipttest.NewLog("other.test/log")
	require.NoError(t, err)

	cases := []struct {
		name   string
		tamper func(r *receipt.Receipt, o *verify.Options)
		chain  string // the anchor that fails ("": every anchor)
		check  string
		reason string
	}{
		{"another pinned key", func(r *receipt.Receipt, o *verify.Options) { o.LogKey = another.VKey }, "", verify.CheckCheckpoint, "signature"},
		{"a key for another log", func(r *receipt.Receipt, o *verify.Options) { o.LogKey = otherOrigin.VKey }, "", verify.CheckCheckpoint,
			`the receipt's log is "keeper.test/log", the key is for "other.test/log"`},
		{"a receipt carrying another key, none pinned", func(r *receipt.Receipt, o *verify.Options) { r.Log.Key, o.LogKey, o.Accounts = another.VKey, "", nil }, "",
			verify.CheckTrust, "nothing pinned"},
		{"accounts pinned without a key", func(r *receipt.Receipt, o *verify.Options) { o.LogKey = "" }, "",
			verify.CheckTrust, "no log key pinned"},
		{"a receipt carrying another key, checked against itself", func(r *receipt.Receipt, o *verify.Options) {
			r.Log.Key, o.LogKey, o.Accounts, o.InsecureTrustReceipt = another.VKey, "", nil, true
		}, "", verify.CheckCheckpoint, "signature"},
		{"a checkpoint edited after signing", func(r *receipt.Receipt, o *verify.Options) {
			r.Log.Checkpoint = strings.Replace(r.Log.Checkpoint, "\n10\n", "\n11\n", 1)
		}, "", verify.CheckCheckpoint, "signature"},
		{"a flipped bit in the inclusion proof", func(r *receipt.Receipt, o *verify.Options) { r.Log.Inclusion[1] = flipHex(r.Log.Inclusion[1]) }, "",
			verify.CheckInclusion, "entry 3 is not in checkpoint 10"},
		{"another index", func(r *receipt.Receipt, o *verify.Options) { r.Log.Index = 2 }, "", verify.CheckInclusion, ""},
		{"another salt", func(r *receipt.Receipt, o *verify.Options) { r.Salt = flipHex(r.Salt) }, "", verify.CheckInclusion, ""},
		{"an anchored checkpoint without the entry", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].TreeSize = 3 }, "etherlink",
			verify.CheckSize, "the anchored checkpoint has 3 entries; the evidence is entry 3"},
		{"a flipped bit in the consistency proof", func(r *receipt.Receipt, o *verify.Options) {
			r.Anchors[0].Consistency[0] = flipHex(r.Anchors[0].Consistency[0])
		}, "etherlink", verify.CheckConsistency, "from size 6 to 10"},
		{"another anchored root", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[1].Root = flipHex(r.Anchors[1].Root) }, "solana",
			verify.CheckConsistency, ""},
		{"another network", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].Network = "eip155:1" }, "etherlink", verify.CheckNetwork, receipt.LocalEVMNetwork},
		{"a transaction nobody sent", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].TxRef = "0x" + strings.Repeat("cd", 32) }, "etherlink",
			verify.CheckTransaction, "is not on"},
		{"a payload naming another log key", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].TxRef = w.EVMOtherKey }, "etherlink",
			verify.CheckPayload, "key hash"},
		{"the same payload sent by another EVM account", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].TxRef = w.EVMByIntruder }, "etherlink",
			verify.CheckAccount, "was sent by " + w.Intruder.Hex() + ", the receipt's anchoring account is " + w.Keeper.Hex()},
		{"the same memo paid by another Solana account", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[1].TxRef = w.SolanaByIntruder }, "solana",
			verify.CheckAccount, "the receipt's anchoring account is"},
		{"another anchoring account", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].Account = w.Intruder.Hex() }, "etherlink",
			verify.CheckAccount, "was sent by " + w.Keeper.Hex()},
		{"no anchoring account", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[1].Account = "" }, "solana",
			verify.CheckAccount, "names no account"},
		{"another block hash", func(r *receipt.Receipt, o *verify.Options) { r.Anchors[0].BlockHash = "0x" + strings.Repeat("ab", 32) }, "etherlink",
			verify.CheckBlock, "hash"},
		{"two endpoints on two forks", func(r *receipt.Receipt, o *verify.Options) {
			o.Endpoints = map[string][]string{"etherlink": {w.ForkURL}}
		}, "etherlink", verify.CheckEndpoints, "endpoint 1 (" + w.EVMURL + ") and endpoint 2 (" + w.ForkURL + ") disagree on its block"},
		{"a second endpoint down", func(r *receipt.Receipt, o *verify.Options) {
			o.Endpoints = map[string][]string{"solana": {"http://127.0.0.1:1/?api-key=s3cret"}}
		}, "solana", verify.CheckTransaction, "endpoint 2 (http://127.0.0.1:1/…)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, o := w.receipt(t), w.options()
			c.tamper(&r, &o)
			res := verify.Receipt(ctx, r, o)
			require.Len(t, res, 2)
			for _, x := range res {
				if c.chain != "" && x.Chain != c.chain {
					assert.True(t, x.OK, "%s is untouched: %s", x.Chain, x.Failed())
					continue
				}
				require.False(t, x.OK, "%s passed", x.Chain)
				assert.Equal(t, c.check, x.Check, x.Failed())
				assert.Contains(t, x.Reason, c.reason)
				assert.NotContains(t, x.Reason, "s3cret")
			}
		})
	}
}

// TestAnchorKindsAndPayloadsMustMatch: a batch anchor (whose proof holds)
// pointing at a transaction that commits to a checkpoint fails: a
// checkpoint payload is not a batch root.
func TestAnchorKindsAndPayloadsMustMatch(t *testing.T) {
	w := newV3World(t)
	r := w.receipt(t)
	r.Anchors[0].Kind, r.Anchors[0].LeafIndex, r.Anchors[0].Path = receipt.AnchorBatch, 0, []string{}
	r.Anchors[0].TreeSize = 1
	// A one-leaf batch whose root is the bare leaf hash of salt ‖ digest.
	leaf, err := r.Leaf()
	require.NoError(t, err)
	h := sha256.Sum256(append([]byte{0}, leaf...))
	r.Anchors[0].Root = hex.EncodeToString(h[:])
	res := verify.Receipt(context.Background(), r, w.options())
	assert.Equal(t, verify.CheckPayload, res[0].Check, res[0].Failed())
	assert.Contains(t, res[0].Reason, "carries checkpoint 6")
}
