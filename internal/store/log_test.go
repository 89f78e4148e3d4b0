package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/merkle"
)

// TestTheLogTakesEveryEvidenceOnceInIntakeOrderWhileIntakeGoesOn appends
// to the log from three nodes sharing one store while evidence keeps
// arriving: every evidence gets exactly one index, indexes are gap-free,
// each entry is SHA-256(salt ‖ digest) of its evidence, and the root the
// store reports is the RFC 6962 root keeper's own merkle package computes
// over the entries — and every inclusion and consistency proof built from
// the stored hashes verifies with golang.org/x/mod/sumdb/tlog.
func TestTheLogTakesEveryEvidenceOnceInIntakeOrderWhileIntakeGoesOn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		where := db.Fresh(t)
		nodes := make([]*store.Store, 3)
		for i := range nodes {
			nodes[i] = storetest.Open(t, where)
			defer nodes[i].Close()
		}
		const total = 900
		var (
			wg    sync.WaitGroup
			stop  = make(chan struct{})
			sizes = make([][]uint64, len(nodes))
		)
		for i, n := range nodes {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					size, _, _, err := n.AppendLog(ctx, 37)
					if !assert.NoError(t, err) {
						return
					}
					sizes[i] = append(sizes[i], size)
					select {
					case <-stop:
						return
					default:
					}
				}
			}()
		}
		var intake sync.WaitGroup
		for w := range 6 {
			intake.Add(1)
			go func() {
				defer intake.Done()
				for i := w; i < total; i += 6 {
					_, _, err := nodes[i%3].InsertEvidence(ctx, store.NewEvidence{Digest: digestOf(fmt.Sprint("log", i)), Chains: []string{"etherlink"}, Priority: 5})
					if !assert.NoError(t, err) {
						return
					}
				}
			}()
		}
		intake.Wait()
		close(stop)
		wg.Wait()
		for {
			_, _, taken, err := nodes[0].AppendLog(ctx, 1000)
			require.NoError(t, err)
			if taken == 0 {
				break
			}
		}
		for _, s := range sizes {
			for i := 1; i < len(s); i++ {
				require.LessOrEqual(t, s[i-1], s[i], "a node saw the log shrink")
			}
		}
		size, err := nodes[1].LogSize(ctx)
		require.NoError(t, err)
		require.EqualValues(t, total, size)
		entries, err := nodes[2].LogEntries(ctx, 0, size)
		require.NoError(t, err)
		seen := map[[32]byte]bool{}
		evs, _, err := nodes[0].ListEvidence(ctx, store.ListFilter{Limit: total})
		require.NoError(t, err)
		require.Len(t, evs, total)
		for _, ev := range evs {
			seen[evlog.EntryOf(ev.Salt, ev.Digest)] = true
		}
		leaves := make([][]byte, len(entries))
		for i, e := range entries {
			require.True(t, seen[e], "entry %d is no evidence's salted commitment", i)
			delete(seen, e)
			leaves[i] = e[:]
		}
		require.Empty(t, seen, "evidence missing from the log")
		for _, ev := range evs {
			idx, ok, err := nodes[0].LogIndexOf(ctx, ev.ID)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, evlog.EntryOf(ev.Salt, ev.Digest), entries[idx])
		}

		_, root, _, err := nodes[0].AppendLog(ctx, 1)
		require.NoError(t, err)
		tree, err := merkle.Build(leaves)
		require.NoError(t, err)
		assert.Equal(t, [32]byte(tree.Root()), root)

		r := nodes[1].LogHashReader(ctx)
		for _, i := range []int64{0, 1, 255, 256, 511, total - 1} {
			p, err := tlog.ProveRecord(total, i, r)
			require.NoError(t, err)
			require.NoError(t, tlog.CheckRecord(p, total, root, i, tlog.RecordHash(entries[i][:])), "inclusion of %d", i)
		}
		for _, m := range []int64{1, 7, 256, 300, total - 1} {
			old, err := tlog.TreeHash(m, r)
			require.NoError(t, err)
			p, err := tlog.ProveTree(total, m, r)
			require.NoError(t, err)
			require.NoError(t, tlog.CheckTree(p, total, root, m, old), "consistency from %d", m)
		}
	})
}

// TestALogKeepsTheKeyItWasFirstSignedWith: a checkpoint signed with
// another key is refused, so a worker given the wrong key file cannot
// start a second history in the same store.
func TestALogKeepsTheKeyItWasFirstSignedWith(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		s := db.Open(t)
		_, _, err := s.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf("k"), Chains: []string{"etherlink"}, Priority: 5})
		require.NoError(t, err)
		size, root, _, err := s.AppendLog(ctx, 10)
		require.NoError(t, err)
		sign := func() (string, []byte) {
			skey, _, err := evlog.GenerateKey("test.example/log")
			require.NoError(t, err)
			sg, err := evlog.NewSigner(skey, "test.example/log")
			require.NoError(t, err)
			note, err := sg.Sign(evlog.Checkpoint{Origin: "test.example/log", Size: size, Root: root})
			require.NoError(t, err)
			return sg.Key().Text, note
		}
		k1, n1 := sign()
		require.NoError(t, s.SaveCheckpoint(ctx, store.LogCheckpoint{Size: size, Root: root, Note: n1}, k1))
		k2, n2 := sign()
		require.ErrorIs(t, s.SaveCheckpoint(ctx, store.LogCheckpoint{Size: size, Root: root, Note: n2}, k2), store.ErrLogKey)
		got, err := s.LatestCheckpoint(ctx)
		require.NoError(t, err)
		assert.Equal(t, n1, got.Note)
		key, err := s.LogKey(ctx)
		require.NoError(t, err)
		assert.Equal(t, k1, key)
	})
}

// pathOf is a batch anchor's audit path, from its batch's leaf hashes as
// receipt.Build reads them.
func pathOf(t *testing.T, st *store.Store, a store.AnchorState) []merkle.Hash {
	t.Helper()
	leaves, err := st.BatchLeafHashes(context.Background(), a.BatchID)
	require.NoError(t, err)
	hs := make([]merkle.Hash, len(leaves))
	for i, h := range leaves {
		hs[i] = h
	}
	tree, err := merkle.FromLeafHashes(hs)
	require.NoError(t, err)
	path, err := tree.Path(a.LeafIndex)
	require.NoError(t, err)
	return path
}

// A batch's checkpoint is fixed by its first submit and moves only forward,
// and only while the batch is not confirmed (a Solana re-sign after every
// transaction of it expired unseen).
func TestABatchsCheckpointMovesOnlyForwardAndNeverOnceConfirmed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		insert(t, st, store.NewEvidence{Digest: digestOf("moves"), Chains: []string{"solana"}, Priority: 5})
		b := formOne(t, st, "solana", 1)

		size, err := st.AdvanceBatchCheckpoint(ctx, b.ID, 9)
		require.NoError(t, err)
		assert.Zero(t, size, "a batch without a checkpoint gets none this way")
		size, err = st.BatchCheckpoint(ctx, b.ID, 3)
		require.NoError(t, err)
		require.Equal(t, uint64(3), size)

		size, err = st.AdvanceBatchCheckpoint(ctx, b.ID, 2)
		require.NoError(t, err)
		assert.Equal(t, uint64(3), size, "never back")
		size, err = st.AdvanceBatchCheckpoint(ctx, b.ID, 7)
		require.NoError(t, err)
		assert.Equal(t, uint64(7), size)
		size, err = st.BatchCheckpoint(ctx, b.ID, 11)
		require.NoError(t, err)
		assert.Equal(t, uint64(7), size, "a first submit's fixing does not move it")

		confirm(t, st, b, "sig", 1)
		size, err = st.AdvanceBatchCheckpoint(ctx, b.ID, 20)
		require.NoError(t, err)
		assert.Equal(t, uint64(7), size, "a confirmed batch's receipts name the tree its transaction carries")
		got, err := st.BatchLogSize(ctx, b.ID)
		require.NoError(t, err)
		assert.Equal(t, uint64(7), got)
	})
}

// pinSigner signs the test log's checkpoints with a key of its own and
// records the sizes it signed; fail, when set, is what signing answers.
type pinSigner struct {
	*evlog.Signer
	signed []uint64
	fail   error
}

func newPinSigner(t *testing.T) *pinSigner {
	t.Helper()
	skey, _, err := evlog.GenerateKey("test.example/log")
	require.NoError(t, err)
	sg, err := evlog.NewSigner(skey, "test.example/log")
	require.NoError(t, err)
	return &pinSigner{Signer: sg}
}

func (p *pinSigner) sign(size uint64, root [32]byte) ([]byte, error) {
	if p.fail != nil {
		return nil, p.fail
	}
	p.signed = append(p.signed, size)
	return p.Sign(evlog.Checkpoint{Origin: p.Origin(), Size: size, Root: root})
}

func (p *pinSigner) pin(st *store.Store, batchID int64) (store.LogCheckpoint, error) {
	return st.PinBatch(context.Background(), batchID, 1000, p.Key().Text, p.sign)
}

// logState is what a pin may write: the log's size, its checkpoints and
// the checkpoint a batch commits to.
type logState struct {
	size        uint64
	checkpoints []store.LogCheckpoint
	pinned      uint64
}

func logStateOf(t *testing.T, st *store.Store, batchID int64) logState {
	t.Helper()
	ctx := context.Background()
	size, err := st.LogSize(ctx)
	require.NoError(t, err)
	cps, err := st.Checkpoints(ctx)
	require.NoError(t, err)
	pinned, err := st.BatchLogSize(ctx, batchID)
	require.NoError(t, err)
	return logState{size, cps, pinned}
}

// Pinning a fresh batch takes into the log the evidence up to the batch's
// last one (not what arrived after it), signs a checkpoint holding them
// and pins the batch to it; a batch whose evidence the latest checkpoint
// holds already is pinned to that one, with nothing signed.
func TestPinningAFreshBatchTakesItsEvidenceInSignsAndPinsIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		st := db.Open(t)
		for i := range 3 {
			insert(t, st, store.NewEvidence{Digest: digestOf(fmt.Sprint("pin", i)), Chains: []string{"etherlink", "solana"}, Priority: 5})
		}
		b := formOne(t, st, "etherlink", 10)
		insert(t, st, store.NewEvidence{Digest: digestOf("after"), Chains: []string{"etherlink"}, Priority: 5})
		p := newPinSigner(t)

		c, err := p.pin(st, b.ID)
		require.NoError(t, err)
		assert.Equal(t, []uint64{3}, p.signed)
		got := logStateOf(t, st, b.ID)
		assert.Equal(t, uint64(3), got.size, "the evidence after the batch's wait for the sequencer")
		require.Len(t, got.checkpoints, 1)
		assert.Equal(t, got.checkpoints[0], c)
		assert.Equal(t, uint64(3), got.pinned)
		root, err := tlog.TreeHash(3, st.LogHashReader(ctx))
		require.NoError(t, err)
		assert.Equal(t, [32]byte(root), c.Root)
		opened, err := p.Key().Open(c.Note)
		require.NoError(t, err)
		assert.Equal(t, evlog.Checkpoint{Origin: p.Origin(), Size: 3, Root: c.Root}, opened)

		other := formOne(t, st, "solana", 10)
		again, err := p.pin(st, other.ID)
		require.NoError(t, err)
		assert.Equal(t, c, again, "the latest checkpoint holds the evidence of the batch on the other chain")
		assert.Equal(t, []uint64{3}, p.signed, "nothing signed")
		assert.Equal(t, uint64(3), logStateOf(t, st, other.ID).pinned)
	})
}

// A batch whose lane ends in evidence of other chains commits to its own
// last evidence: pinning takes the log up to it, not to the span's end,
// and its log span is that evidence's index + 1.
func TestABatchWhoseLaneEndsInOtherChainsEvidenceCommitsToItsOwnLastEvidence(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		st := db.Open(t)
		insert(t, st, store.NewEvidence{Digest: digestOf("top-1"), Chains: []string{"etherlink"}, Priority: 5})
		insert(t, st, store.NewEvidence{Digest: digestOf("top-2"), Chains: []string{"etherlink", "solana"}, Priority: 5})
		insert(t, st, store.NewEvidence{Digest: digestOf("top-3"), Chains: []string{"solana"}, Priority: 5})
		insert(t, st, store.NewEvidence{Digest: digestOf("top-4"), Chains: []string{"solana"}, Priority: 5})
		b := formOne(t, st, "etherlink", 10)
		require.Equal(t, 2, b.Size)
		p := newPinSigner(t)

		_, err := p.pin(st, b.ID)
		require.NoError(t, err)
		assert.Equal(t, []uint64{2}, p.signed, "signed at the batch's last evidence, not at the lane's")
		assert.Equal(t, uint64(2), logStateOf(t, st, b.ID).pinned)
		need, missing, err := st.BatchLogSpan(ctx, b.ID)
		require.NoError(t, err)
		assert.Equal(t, uint64(2), need)
		assert.Zero(t, missing)

		other := formOne(t, st, "solana", 10)
		need, missing, err = st.BatchLogSpan(ctx, other.ID)
		require.NoError(t, err)
		assert.Equal(t, uint64(2), need, "its first evidence is in the log")
		assert.Equal(t, 2, missing, "the two after it are not yet")
	})
}

// A batch pinned already gets its checkpoint back with nothing written,
// even while the log has grown and more evidence waits.
func TestPinningAPinnedBatchAgainWritesNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		insert(t, st, store.NewEvidence{Digest: digestOf("first"), Chains: []string{"etherlink"}, Priority: 5})
		b := formOne(t, st, "etherlink", 10)
		p := newPinSigner(t)
		c, err := p.pin(st, b.ID)
		require.NoError(t, err)
		insert(t, st, store.NewEvidence{Digest: digestOf("second"), Chains: []string{"etherlink"}, Priority: 5})
		later := formOne(t, st, "etherlink", 10)
		_, err = p.pin(st, later.ID)
		require.NoError(t, err)
		insert(t, st, store.NewEvidence{Digest: digestOf("waiting"), Chains: []string{"etherlink"}, Priority: 5})
		before := logStateOf(t, st, b.ID)

		p.fail = errors.New("signed a pinned batch's checkpoint")
		again, err := p.pin(st, b.ID)
		require.NoError(t, err)
		assert.Equal(t, c, again)
		assert.Equal(t, before, logStateOf(t, st, b.ID), "nothing taken in, signed or pinned")
	})
}

// A pin that fails part of the way, in signing or in saving what was
// signed, leaves the log, its checkpoints and the batch as they were.
func TestAPinThatFailsMidwayLeavesNeitherCheckpointNorPin(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		insert(t, st, store.NewEvidence{Digest: digestOf("one"), Chains: []string{"etherlink"}, Priority: 5})
		first := formOne(t, st, "etherlink", 10)
		p := newPinSigner(t)

		p.fail = errors.New("the signer is gone")
		_, err := p.pin(st, first.ID)
		require.ErrorIs(t, err, p.fail)
		assert.Equal(t, logState{}, logStateOf(t, st, first.ID), "the append went with the signature")

		p.fail = nil
		_, err = p.pin(st, first.ID)
		require.NoError(t, err)
		insert(t, st, store.NewEvidence{Digest: digestOf("two"), Chains: []string{"etherlink"}, Priority: 5})
		second := formOne(t, st, "etherlink", 10)
		before := logStateOf(t, st, second.ID)
		wrongKey := newPinSigner(t) // signs, then its checkpoint is refused when saved
		_, err = wrongKey.pin(st, second.ID)
		require.ErrorIs(t, err, store.ErrLogKey)
		assert.Equal(t, []uint64{2}, wrongKey.signed)
		assert.Equal(t, before, logStateOf(t, st, second.ID), "neither the append, the checkpoint nor the pin stayed")
	})
}

// A batch whose first transaction was journaled before it was pinned
// anchors its own root: pinning refuses it and writes nothing; a batch
// pinned before its transaction was journaled keeps its checkpoint.
func TestABatchJournaledWithoutACheckpointIsNotPinned(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		st := db.Open(t)
		insert(t, st, store.NewEvidence{Digest: digestOf("old"), Chains: []string{"etherlink"}, Priority: 5})
		old := formOne(t, st, "etherlink", 10)
		require.NoError(t, st.SaveTransaction(ctx, store.JournaledTx{BatchID: old.ID, Chain: "etherlink", Ref: "0x01", Raw: []byte{1}, CreatedAt: time.Now()}))
		p := newPinSigner(t)
		_, err := p.pin(st, old.ID)
		require.ErrorIs(t, err, store.ErrBatchBeforeLog)
		assert.Equal(t, logState{}, logStateOf(t, st, old.ID))

		insert(t, st, store.NewEvidence{Digest: digestOf("new"), Chains: []string{"etherlink"}, Priority: 5})
		fresh := formOne(t, st, "etherlink", 10)
		c, err := p.pin(st, fresh.ID)
		require.NoError(t, err)
		require.NoError(t, st.SaveTransaction(ctx, store.JournaledTx{BatchID: fresh.ID, Chain: "etherlink", Ref: "0x02", Raw: []byte{2}, CreatedAt: time.Now()}))
		again, err := p.pin(st, fresh.ID)
		require.NoError(t, err)
		assert.Equal(t, c, again)

		_, err = p.pin(st, fresh.ID+100)
		assert.ErrorIs(t, err, store.ErrNotFound)
	})
}

// A batch further from the log's end than one append takes in is not
// pinned: what was taken in stays, and a later pin goes on from there.
func TestABatchBeyondOneAppendIsPinnedOnceTheLogReachesIt(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		st := db.Open(t)
		for i := range 9 {
			insert(t, st, store.NewEvidence{Digest: digestOf(fmt.Sprint("before", i)), Chains: []string{"solana"}, Priority: 5})
		}
		insert(t, st, store.NewEvidence{Digest: digestOf("last"), Chains: []string{"etherlink"}, Priority: 5})
		b := formOne(t, st, "etherlink", 10)
		p := newPinSigner(t)
		pin := func() (store.LogCheckpoint, error) {
			return st.PinBatch(ctx, b.ID, 4, p.Key().Text, p.sign)
		}
		for _, size := range []uint64{4, 8} {
			_, err := pin()
			require.ErrorIs(t, err, store.ErrBatchNotInLog)
			got := logStateOf(t, st, b.ID)
			assert.Equal(t, logState{size: size}, got)
		}
		c, err := pin()
		require.NoError(t, err)
		assert.Equal(t, uint64(10), c.Size)
		assert.Equal(t, []uint64{10}, p.signed)
	})
}

// A batch that holds no evidence (dead-lettered, its anchors re-driven
// into another) cannot be pinned, and pinning it writes nothing.
func TestAnEmptyBatchIsNotPinned(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		st := db.Open(t)
		insert(t, st, store.NewEvidence{Digest: digestOf("dead"), Chains: []string{"etherlink"}, Priority: 5})
		b := formOne(t, st, "etherlink", 10)
		require.NoError(t, st.DeadLetterBatch(ctx, b.ID, "etherlink down"))
		_, err := st.Redrive(ctx, store.RedriveFilter{BatchID: b.ID})
		require.NoError(t, err)
		p := newPinSigner(t)
		_, err = p.pin(st, b.ID)
		require.ErrorIs(t, err, store.ErrEmptyBatch)
		assert.Equal(t, logState{}, logStateOf(t, st, b.ID))
	})
}
