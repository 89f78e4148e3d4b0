package audit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/audit"
	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/receipt"
)

// anchoredLog is a log of 315 entries whose checkpoints of 5 and 305
// entries are anchored on both chains and listed by keeper.
func anchoredLog(t *testing.T) *fixture {
	t.Helper()
	f := newFixture(t)
	f.grow(t, 5)
	f.anchor(t, "etherlink")
	f.anchor(t, "solana")
	f.grow(t, 300)
	f.anchor(t, "etherlink")
	f.anchor(t, "solana")
	f.grow(t, 10)
	return f
}

func TestACleanLogPassesTheAuditServedByKeeperAndFromAnExport(t *testing.T) {
	f := anchoredLog(t)
	dir := f.export(t)
	for name, loc := range map[string]string{"keeper": f.serve(t), "file server": serveDir(t, dir), "directory": dir} {
		r := f.audit(t, loc)
		_, all := kinds(r)
		assert.True(t, r.OK(), "%s: %s", name, all)
		assert.Empty(t, r.Warnings, name)
		assert.EqualValues(t, 315, r.Latest.Size, name)
		assert.Equal(t, 2, r.Checkpoints, name)
		assert.Equal(t, map[string]int{"etherlink": 2, "solana": 2}, r.Anchors, name)
	}
	// With nothing pinned the audit is not made: the log's own key proves nothing.
	c, err := evlog.NewClient(dir, nil)
	require.NoError(t, err)
	_, err = audit.Run(context.Background(), audit.Options{Log: c, Chains: []audit.Chain{{Name: "etherlink", RPC: evmChain.URL()}}})
	assert.ErrorIs(t, err, audit.ErrNothingPinned)
}

func TestTheAuditCatchesARewrittenEntry(t *testing.T) {
	f := anchoredLog(t)
	dir := copyDir(t, f.export(t))
	// Entry 300 (the 45th of the second bundle) is rewritten; the hash
	// tiles are left as they were.
	bundle := filepath.Join(dir, "tile", "entries", "001.p", "59")
	b, err := os.ReadFile(bundle)
	require.NoError(t, err)
	b[44*34+2] ^= 1
	require.NoError(t, os.WriteFile(bundle, b, 0o644))

	r := f.audit(t, serveDir(t, dir))
	ks, all := kinds(r)
	assert.Equal(t, []string{audit.KindEntries}, ks, all)
	assert.Contains(t, all, "entry 300")
}

func TestTheAuditCatchesRewrittenHashTiles(t *testing.T) {
	f := anchoredLog(t)
	dir := copyDir(t, f.export(t))
	tile := filepath.Join(dir, "tile", "0", "000")
	b, err := os.ReadFile(tile)
	require.NoError(t, err)
	b[3*32] ^= 1
	require.NoError(t, os.WriteFile(tile, b, 0o644))

	r := f.audit(t, dir)
	ks, all := kinds(r)
	assert.Contains(t, ks, audit.KindTiles, all)
	assert.Contains(t, all, "do not rebuild the latest checkpoint's root")
}

func TestTheAuditCatchesACheckpointSignedByAnotherKey(t *testing.T) {
	f := anchoredLog(t)
	exported := f.export(t)
	other := otherSigner(t)

	t.Run("an anchored checkpoint", func(t *testing.T) {
		dir := copyDir(t, exported)
		forged := resign(t, other, filepath.Join(dir, "checkpoints", "5"))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "checkpoints", "5"), forged, 0o644))
		r := f.audit(t, dir)
		ks, all := kinds(r)
		assert.Equal(t, []string{audit.KindSignature}, ks, all)
		assert.Contains(t, all, "checkpoints/5")
	})
	t.Run("the latest checkpoint", func(t *testing.T) {
		dir := copyDir(t, exported)
		forged := resign(t, other, filepath.Join(dir, "checkpoint"))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "checkpoint"), forged, 0o644))
		r := f.audit(t, dir)
		ks, all := kinds(r)
		assert.Equal(t, []string{audit.KindSignature}, ks, all)
		assert.Contains(t, all, "the latest checkpoint")
	})
	t.Run("a key served in place of the pinned one", func(t *testing.T) {
		dir := copyDir(t, exported)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "key"), []byte(other.Key().Text+"\n"), 0o644))
		forged := resign(t, other, filepath.Join(dir, "checkpoint"))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "checkpoint"), forged, 0o644))
		r := f.audit(t, dir)
		ks, all := kinds(r)
		assert.Equal(t, []string{audit.KindKey, audit.KindSignature}, ks, all)
	})
	t.Run("an anchor of a checkpoint of another key", func(t *testing.T) {
		cp, err := f.st.CheckpointAt(context.Background(), 305)
		require.NoError(t, err)
		f.sendUnlisted(t, "solana", receipt.CheckpointRef{KeyHash: other.Key().Hash, Size: 305, Root: cp.Root})
		r := f.audit(t, exported)
		ks, all := kinds(r)
		assert.Equal(t, []string{audit.KindKey}, ks, all)
		assert.Contains(t, all, "not the log's")
	})
}

func TestTheAuditCatchesASmallerTreeAnchoredAfterABiggerOne(t *testing.T) {
	for _, chain := range bothChains {
		t.Run(chain, func(t *testing.T) {
			f := anchoredLog(t)
			// The checkpoint of 5 entries again, after the one of 305: each
			// is signed and consistent, and still the chain's history of
			// the log went back. keeper does not list it: the audit finds it
			// in the account's own history.
			first, err := f.st.CheckpointAt(context.Background(), 5)
			require.NoError(t, err)
			tx := f.sendUnlisted(t, chain, receipt.CheckpointRef{KeyHash: f.signer.Key().Hash, Size: 5, Root: first.Root})
			r := f.audit(t, f.serve(t))
			ks, all := kinds(r)
			assert.Equal(t, []string{audit.KindOrder}, ks, all)
			assert.Contains(t, all, tx)
			assert.Equal(t, 3, r.Anchors[chain])
		})
	}
}

func TestTheAuditCatchesTwoTreesOfOneSize(t *testing.T) {
	f := anchoredLog(t)
	// A second history: 305 entries with another root, signed with the
	// log's key and anchored from its account.
	var root [32]byte
	root[0] = 1
	f.sendUnlisted(t, "etherlink", receipt.CheckpointRef{KeyHash: f.signer.Key().Hash, Size: 305, Root: root})
	r := f.audit(t, f.export(t))
	ks, all := kinds(r)
	assert.Contains(t, ks, audit.KindFork, all)
	assert.Contains(t, all, "two trees of one size")
}

func TestTheAuditCatchesAnAnchorBeyondTheLog(t *testing.T) {
	f := anchoredLog(t)
	dir := f.export(t) // 315 entries
	f.grow(t, 20)
	f.anchor(t, "etherlink")
	r := f.audit(t, dir)
	ks, all := kinds(r)
	// The mirror has neither the checkpoint of 335 entries nor the anchor in its list.
	assert.Equal(t, []string{audit.KindMissing, audit.KindMissing}, ks, all)
	assert.Contains(t, all, "beyond the log's latest checkpoint of 315 entries")
}

func TestTheAuditReportsNoncesItCouldNotExamine(t *testing.T) {
	f := anchoredLog(t)
	f.sendUnlisted(t, "etherlink", receipt.CheckpointRef{KeyHash: f.signer.Key().Hash, Size: 305})
	require.NoError(t, evmChain.Mine(3))
	r := f.audit(t, f.export(t), func(o *audit.Options) { o.ScanBlocks = 2 })
	ks, all := kinds(r)
	assert.Equal(t, []string{audit.KindNonce}, ks, all)
	assert.Contains(t, all, "nonce 2 is neither")
}

func otherSigner(t *testing.T) *evlog.Signer {
	t.Helper()
	skey, _, err := evlog.GenerateKey(testOrigin)
	require.NoError(t, err)
	s, err := evlog.NewSigner(skey, testOrigin)
	require.NoError(t, err)
	return s
}

// resign signs the checkpoint body of a signed note file with another key.
func resign(t *testing.T, s *evlog.Signer, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	i := indexBlankLine(b)
	c, err := evlog.ParseBody(string(b[:i+1]))
	require.NoError(t, err)
	forged, err := s.Sign(c)
	require.NoError(t, err)
	return forged
}

func indexBlankLine(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\n' && b[i+1] == '\n' {
			return i
		}
	}
	return -1
}

func TestAnAuditOfALiveLogReadsTheCheckpointAgainWhenAChainIsAhead(t *testing.T) {
	f := anchoredLog(t)
	before, err := f.st.LatestCheckpoint(context.Background()) // 315 entries
	require.NoError(t, err)
	f.grow(t, 20)
	f.anchor(t, "etherlink")
	// The log answers its first reader the checkpoint it had before it
	// grew and anchored, as if the audit had started a moment earlier.
	var reads atomic.Int32
	keeper := logsvc.Handler(f.st)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/log/checkpoint" && reads.Add(1) == 1 {
			_, _ = w.Write(before.Note)
			return
		}
		keeper.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	r := f.audit(t, srv.URL+"/log")
	_, all := kinds(r)
	assert.True(t, r.OK(), all)
	assert.EqualValues(t, 335, r.Latest.Size)
	assert.Equal(t, int32(2), reads.Load())
}

func TestTheAuditCatchesAnAnchorKeeperListsThatAnotherAccountSent(t *testing.T) {
	f := anchoredLog(t)
	ctx := context.Background()
	cp, err := f.st.LatestCheckpoint(ctx)
	require.NoError(t, err)
	// Someone else's account posts the log's checkpoint, and keeper's list
	// names that transaction as its own anchor.
	other := newFixture(t)
	ref := receipt.CheckpointRef{KeyHash: f.signer.Key().Hash, Size: cp.Size, Root: cp.Root}
	for _, chain := range bothChains {
		tx := other.sendUnlisted(t, chain, ref)
		b, ok, err := f.st.FormBatch(ctx, chain, 100_000)
		require.NoError(t, err)
		require.True(t, ok)
		_, err = f.st.BatchCheckpoint(ctx, b.ID, cp.Size)
		require.NoError(t, err)
		require.NoError(t, f.st.MarkSubmitted(ctx, b.ID, cp.Root, tx))
		require.NoError(t, f.st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: tx, Block: 1, Account: chains.AccountOf(f.chains[chain])}))
	}
	r := f.audit(t, f.serve(t))
	ks, all := kinds(r)
	assert.Equal(t, []string{audit.KindAnchor, audit.KindAnchor}, ks, all)
	assert.Contains(t, all, "etherlink: keeper lists tx")
	assert.Contains(t, all, "which was not sent by the anchoring account")
	assert.Contains(t, all, "solana: keeper lists tx")
	assert.Contains(t, all, "which was not paid by the anchoring account")

	t.Run("or an account other than the one pinned", func(t *testing.T) {
		r := f.audit(t, f.serve(t), func(o *audit.Options) {
			o.Chains[0].Accounts = []string{chains.AccountOf(other.chains["etherlink"])}
		})
		ks, all := kinds(r)
		assert.Contains(t, all, "not an anchoring account")
		assert.NotContains(t, ks, audit.KindOrder, all)
	})
}
