package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/merkle"
)

func digestOf(s string) [32]byte { return sha256.Sum256([]byte(s)) }

// nextMillisecond waits until the clock reads a later millisecond than when
// it was called (the stores keep times in milliseconds) and returns that
// time: what is written after it is later than what was written before.
func nextMillisecond(t *testing.T) time.Time {
	t.Helper()
	was := time.Now().UnixMilli()
	var now time.Time
	require.Eventually(t, func() bool { now = time.Now(); return now.UnixMilli() > was }, time.Second, 100*time.Microsecond)
	return now
}

func insert(t *testing.T, st *store.Store, ne store.NewEvidence) store.Evidence {
	t.Helper()
	ev, created, err := st.InsertEvidence(context.Background(), ne)
	require.NoError(t, err)
	require.True(t, created)
	return ev
}

func listAll(t *testing.T, st *store.Store, status store.Status) []store.Evidence {
	t.Helper()
	var all []store.Evidence
	cursor := ""
	for {
		page, next, err := st.ListEvidence(context.Background(), store.ListFilter{Status: status, Limit: 1000, Cursor: cursor})
		require.NoError(t, err)
		all = append(all, page...)
		if next == "" {
			return all
		}
		cursor = next
	}
}

func get(t *testing.T, st *store.Store, id string) store.Evidence {
	t.Helper()
	ev, err := st.GetEvidence(context.Background(), id)
	require.NoError(t, err)
	return ev
}

func anchorOn(t *testing.T, ev store.Evidence, chain string) store.AnchorState {
	t.Helper()
	for _, a := range ev.Anchors {
		if a.Chain == chain {
			return a
		}
	}
	t.Fatalf("evidence %s has no anchor on %s: %+v", ev.ID, chain, ev.Anchors)
	return store.AnchorState{}
}

// formOne forms one batch on chain and fails the test when nothing was pending.
func formOne(t *testing.T, st *store.Store, chain string, maxItems int) store.Batch {
	t.Helper()
	b, ok, err := st.FormBatch(context.Background(), chain, maxItems)
	require.NoError(t, err)
	require.True(t, ok, "expected pending evidence on %s", chain)
	return b
}

// confirm submits and confirms a batch with the real Merkle root of its leaves.
func confirm(t *testing.T, st *store.Store, b store.Batch, ref string, block uint64) merkle.Hash {
	t.Helper()
	ctx := context.Background()
	leaves, err := st.BatchLeaves(ctx, b.ID)
	require.NoError(t, err)
	tree, err := merkle.Build(leaves)
	require.NoError(t, err)
	require.NoError(t, st.MarkSubmitted(ctx, b.ID, tree.Root(), ref))
	require.NoError(t, st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: ref, Block: block, BlockTime: time.UnixMilli(1_700_000_000_000).UTC()}))
	return tree.Root()
}

func TestInsertEvidenceStoresTheEvidenceWithOnePendingAnchorPerChain(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		ev := insert(t, st, store.NewEvidence{Digest: digestOf("a"), Chains: []string{"eth", "stub"}, Priority: 3, Metadata: json.RawMessage(`{"case":7}`)})

		assert.Regexp(t, `^ev_[0-9a-f]{24}$`, ev.ID)
		got := get(t, st, ev.ID)
		assert.Equal(t, digestOf("a"), got.Digest)
		assert.Equal(t, []string{"eth", "stub"}, got.Chains)
		assert.Equal(t, 3, got.Priority)
		assert.Equal(t, store.StatusPending, got.Status)
		assert.JSONEq(t, `{"case":7}`, string(got.Metadata))
		require.Len(t, got.Anchors, 2)
		for _, a := range got.Anchors {
			assert.Equal(t, store.StatusPending, a.Status)
			assert.Zero(t, a.BatchID)
		}

		pending, err := st.PendingChains(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, pending["eth"].Count)
		assert.Equal(t, 1, pending["stub"].Count)
		n, err := st.PendingCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n)
	})
}

func TestInsertEvidenceTheStoreRefusesStoresNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		// It lists a chain twice, which the store refuses: nothing of it is
		// stored.
		_, _, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf("a"), Chains: []string{"stub", "stub"}, Priority: 5})
		require.Error(t, err)

		assert.Empty(t, listAll(t, st, ""))
		pending, err := st.PendingChains(ctx)
		require.NoError(t, err)
		assert.Empty(t, pending)
		n, err := st.PendingCount(ctx)
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

func TestGetEvidenceOfAnUnknownIDIsNotFound(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		_, err := st.GetEvidence(context.Background(), "ev_000000000000000000000000")
		assert.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestAnIdempotencyKeySeenBeforeReturnsTheStoredEvidenceAndStoresNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		first := insert(t, st, store.NewEvidence{Digest: digestOf("a"), Chains: []string{"stub"}, Priority: 5, IdempotencyKey: "order-42"})

		again, created, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf("b"), Chains: []string{"stub"}, Priority: 1, IdempotencyKey: "order-42"})
		require.NoError(t, err)
		assert.False(t, created)
		assert.Equal(t, first.ID, again.ID)
		assert.Equal(t, digestOf("a"), again.Digest, "the stored evidence is returned, not the new request")
		assert.Equal(t, "order-42", again.IdempotencyKey)
		require.Len(t, again.Anchors, 1)

		all := listAll(t, st, "")
		require.Len(t, all, 1)
		assert.Equal(t, first.ID, all[0].ID)

		// Another key, or no key, stores a new evidence.
		insert(t, st, store.NewEvidence{Digest: digestOf("a"), Chains: []string{"stub"}, Priority: 5, IdempotencyKey: "order-43"})
		insert(t, st, store.NewEvidence{Digest: digestOf("a"), Chains: []string{"stub"}, Priority: 5})
		insert(t, st, store.NewEvidence{Digest: digestOf("a"), Chains: []string{"stub"}, Priority: 5})
		assert.Len(t, listAll(t, st, ""), 4)
	})
}

func TestConcurrentInsertsWithTheSameIdempotencyKeyStoreExactlyOneEvidence(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		const n = 20
		var (
			wg      sync.WaitGroup
			ids     [n]string
			created [n]bool
			errs    [n]error
			start   = make(chan struct{})
		)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ev, c, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf(fmt.Sprint(i)), Chains: []string{"stub"}, Priority: 5, IdempotencyKey: "same-key"})
				ids[i], created[i], errs[i] = ev.ID, c, err
			}()
		}
		close(start)
		wg.Wait()

		nCreated := 0
		for i := range n {
			require.NoError(t, errs[i])
			assert.Equal(t, ids[0], ids[i])
			if created[i] {
				nCreated++
			}
		}
		assert.Equal(t, 1, nCreated)
		all := listAll(t, st, "")
		require.Len(t, all, 1)
		assert.Equal(t, ids[0], all[0].ID)
		pending, err := st.PendingChains(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, pending["stub"].Count)
	})
}

func TestFormBatchTakesHighestPriorityFirstThenOldestAndNeverTwice(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		priorities := []int{5, 1, 9, 5, 1, 3, 10, 3, 5, 1}
		var evs []store.Evidence
		for i, p := range priorities {
			evs = append(evs, insert(t, st, store.NewEvidence{Digest: digestOf(fmt.Sprint("item", i)), Chains: []string{"stub"}, Priority: p}))
		}
		// Another chain's evidence is never taken into a stub batch.
		other := insert(t, st, store.NewEvidence{Digest: digestOf("other"), Chains: []string{"eth"}, Priority: 1})

		// By priority, then intake order.
		wantOrder := []int{1, 4, 9, 5, 7, 0, 3, 8, 2, 6}
		wantSizes := []int{3, 3, 3, 1}
		wantPrio := []int{1, 3, 5, 10}

		var batches []store.Batch
		for {
			b, ok, err := st.FormBatch(ctx, "stub", 3)
			require.NoError(t, err)
			if !ok {
				break
			}
			batches = append(batches, b)
		}
		require.Len(t, batches, 4)

		var gotOrder [][]byte
		for i, b := range batches {
			assert.Equal(t, "stub", b.Chain)
			assert.Equal(t, wantSizes[i], b.Size, "batch %d size", i)
			assert.Equal(t, wantPrio[i], b.Priority, "batch %d takes its best priority", i)
			assert.Equal(t, store.BatchFormed, b.State)
			d, err := st.BatchDigests(ctx, b.ID)
			require.NoError(t, err)
			assert.Len(t, d, b.Size)
			gotOrder = append(gotOrder, d...)
		}
		var want [][]byte
		for _, i := range wantOrder {
			d := evs[i].Digest
			want = append(want, d[:])
		}
		assert.Equal(t, want, gotOrder, "every evidence in exactly one batch, by priority then age")

		for _, ev := range evs {
			got := get(t, st, ev.ID)
			assert.Equal(t, store.StatusBatched, got.Status)
			assert.NotZero(t, anchorOn(t, got, "stub").BatchID)
		}
		assert.Equal(t, store.StatusPending, get(t, st, other.ID).Status)
		n, err := st.PendingCount(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "only the eth evidence still waits")

		formed, err := st.FormedBatches(ctx)
		require.NoError(t, err)
		assert.Len(t, formed, 4)
		busy, err := st.AwaitingSubmit(ctx, "stub")
		require.NoError(t, err)
		assert.True(t, busy)
	})
}

func TestConcurrentFormBatchNeverPutsOneEvidenceInTwoBatches(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		for i := range 30 {
			insert(t, st, store.NewEvidence{Digest: digestOf(fmt.Sprint(i)), Chains: []string{"stub"}, Priority: 1 + i%10})
		}
		var (
			mu   sync.Mutex
			seen = map[[32]byte]int{}
			wg   sync.WaitGroup
		)
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					b, ok, err := st.FormBatch(ctx, "stub", 4)
					if !assert.NoError(t, err) || !ok {
						return
					}
					d, err := st.BatchDigests(ctx, b.ID)
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					for _, x := range d {
						seen[[32]byte(x)]++
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		assert.Len(t, seen, 30)
		for d, n := range seen {
			assert.Equal(t, 1, n, "digest %x batched %d times", d, n)
		}
	})
}

func TestFormBatchWithNothingPendingFormsNoBatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		_, ok, err := st.FormBatch(context.Background(), "stub", 10)
		require.NoError(t, err)
		assert.False(t, ok)
		formed, err := st.FormedBatches(context.Background())
		require.NoError(t, err)
		assert.Empty(t, formed)
	})
}

func TestEvidenceOnTwoChainsIsConfirmedOnlyOnceBothChainsConfirm(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ev := insert(t, st, store.NewEvidence{Digest: digestOf("both"), Chains: []string{"eth", "stub"}, Priority: 5})

		bs := formOne(t, st, "stub", 10)
		assert.Equal(t, store.StatusPending, get(t, st, ev.ID).Status, "eth still waits for a batch")
		be := formOne(t, st, "eth", 10)
		assert.Equal(t, store.StatusBatched, get(t, st, ev.ID).Status)

		rootStub := confirm(t, st, bs, "0xstub", 7)
		got := get(t, st, ev.ID)
		assert.Equal(t, store.StatusBatched, got.Status, "one chain confirmed is not enough")
		assert.Equal(t, store.StatusConfirmed, anchorOn(t, got, "stub").Status)
		assert.Equal(t, store.StatusBatched, anchorOn(t, got, "eth").Status)

		require.NoError(t, st.MarkSubmitted(context.Background(), be.ID, [32]byte{1}, "0xeth-pending"))
		got = get(t, st, ev.ID)
		assert.Equal(t, store.StatusSubmitted, got.Status)
		assert.Equal(t, "0xeth-pending", anchorOn(t, got, "eth").TxRef)

		rootEth := confirm(t, st, be, "0xeth", 9)
		got = get(t, st, ev.ID)
		assert.Equal(t, store.StatusConfirmed, got.Status)
		s, e := anchorOn(t, got, "stub"), anchorOn(t, got, "eth")
		assert.Equal(t, [32]byte(rootStub), s.Root)
		assert.Equal(t, "0xstub", s.TxRef)
		assert.Equal(t, uint64(7), s.Block)
		assert.Equal(t, [32]byte(rootEth), e.Root)
		assert.Equal(t, "0xeth", e.TxRef)
		assert.Equal(t, uint64(9), e.Block)
		assert.Equal(t, time.UnixMilli(1_700_000_000_000).UTC(), e.BlockTime)
		assert.Equal(t, 1, e.TreeSize)

		b, err := st.GetBatch(context.Background(), be.ID)
		require.NoError(t, err)
		assert.Equal(t, store.BatchConfirmed, b.State)
		assert.Equal(t, "0xeth", b.TxRef)
	})
}

func TestEvidenceOnTwoChainsIsDeadLetteredWhenEitherChainDeadLetters(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()

		// eth dead-letters after stub confirmed.
		ev1 := insert(t, st, store.NewEvidence{Digest: digestOf("one"), Chains: []string{"eth", "stub"}, Priority: 5})
		bs := formOne(t, st, "stub", 1)
		be := formOne(t, st, "eth", 1)
		confirm(t, st, bs, "0xs", 1)
		require.NoError(t, st.DeadLetterBatch(ctx, be.ID, "eth: out of gas"))
		got := get(t, st, ev1.ID)
		assert.Equal(t, store.StatusDeadLetter, got.Status)
		assert.Equal(t, "eth: out of gas", got.LastError)
		assert.Equal(t, store.StatusConfirmed, anchorOn(t, got, "stub").Status)
		assert.Equal(t, store.StatusDeadLetter, anchorOn(t, got, "eth").Status)

		// stub dead-letters while eth has not even been batched.
		ev2 := insert(t, st, store.NewEvidence{Digest: digestOf("two"), Chains: []string{"eth", "stub"}, Priority: 5})
		bs2 := formOne(t, st, "stub", 1)
		require.NoError(t, st.DeadLetterBatch(ctx, bs2.ID, "stub: rejected"))
		assert.Equal(t, store.StatusDeadLetter, get(t, st, ev2.ID).Status)

		// A confirmed batch cannot be dead-lettered afterwards, and the reverse.
		require.NoError(t, st.DeadLetterBatch(ctx, bs.ID, "late"))
		assert.Equal(t, store.StatusConfirmed, anchorOn(t, get(t, st, ev1.ID), "stub").Status)
		require.NoError(t, st.ConfirmBatch(ctx, be.ID, store.Confirmation{TxRef: "late"}))
		assert.Equal(t, store.StatusDeadLetter, get(t, st, ev1.ID).Status)

		dead := listAll(t, st, store.StatusDeadLetter)
		require.Len(t, dead, 2)
		assert.Equal(t, ev1.ID, dead[0].ID)
		assert.Equal(t, ev2.ID, dead[1].ID)
	})
}

func TestRetryEvidencePutsOnlyTheDeadLetteredAnchorsBackInTheOutbox(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		ev := insert(t, st, store.NewEvidence{Digest: digestOf("x"), Chains: []string{"eth", "stub"}, Priority: 5})
		bs := formOne(t, st, "stub", 10)
		be := formOne(t, st, "eth", 10)
		root := confirm(t, st, bs, "0xs", 3)
		require.NoError(t, st.RecordAttempt(ctx, be.ID, 4, "eth: nonce too low"))
		got := get(t, st, ev.ID)
		assert.Equal(t, 4, got.Attempts)
		assert.Equal(t, "eth: nonce too low", got.LastError)
		require.NoError(t, st.DeadLetterBatch(ctx, be.ID, "eth: gave up"))

		retried, err := st.RetryEvidence(ctx, ev.ID)
		require.NoError(t, err)
		assert.Equal(t, store.StatusPending, retried.Status)
		assert.Zero(t, retried.Attempts)
		assert.Empty(t, retried.LastError)

		got = get(t, st, ev.ID)
		assert.Equal(t, store.StatusPending, got.Status)
		s := anchorOn(t, got, "stub")
		assert.Equal(t, store.StatusConfirmed, s.Status, "the confirmed chain keeps its proof")
		assert.Equal(t, bs.ID, s.BatchID)
		assert.Equal(t, [32]byte(root), s.Root)
		assert.Equal(t, "0xs", s.TxRef)
		e := anchorOn(t, got, "eth")
		assert.Equal(t, store.StatusPending, e.Status)
		assert.Zero(t, e.BatchID)

		pending, err := st.PendingChains(ctx)
		require.NoError(t, err)
		assert.Equal(t, map[string]int{"eth": 1}, map[string]int{"eth": pending["eth"].Count})
		assert.NotContains(t, pending, "stub")

		// The retried anchor goes into a new batch and can then confirm.
		be2 := formOne(t, st, "eth", 10)
		assert.NotEqual(t, be.ID, be2.ID)
		confirm(t, st, be2, "0xe2", 4)
		assert.Equal(t, store.StatusConfirmed, get(t, st, ev.ID).Status)
	})
}

func TestRetryEvidenceRefusesEvidenceThatIsNotDeadLettered(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		ev := insert(t, st, store.NewEvidence{Digest: digestOf("x"), Chains: []string{"stub"}, Priority: 5})

		_, err := st.RetryEvidence(ctx, ev.ID)
		assert.ErrorIs(t, err, store.ErrConflict)
		b := formOne(t, st, "stub", 10)
		_, err = st.RetryEvidence(ctx, ev.ID)
		assert.ErrorIs(t, err, store.ErrConflict)
		confirm(t, st, b, "0x1", 1)
		_, err = st.RetryEvidence(ctx, ev.ID)
		assert.ErrorIs(t, err, store.ErrConflict)
		assert.Equal(t, store.StatusConfirmed, get(t, st, ev.ID).Status)

		_, err = st.RetryEvidence(ctx, "ev_000000000000000000000000")
		assert.ErrorIs(t, err, store.ErrNotFound)
	})
}

func TestSavedTransactionsComeBackInTheOrderTheyWereSavedPerBatch(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		insert(t, st, store.NewEvidence{Digest: digestOf("1"), Chains: []string{"stub"}, Priority: 5})
		b1 := formOne(t, st, "stub", 10)
		insert(t, st, store.NewEvidence{Digest: digestOf("2"), Chains: []string{"stub"}, Priority: 5})
		b2 := formOne(t, st, "stub", 10)

		at := time.UnixMilli(1_700_000_123_456).UTC()
		refs := []string{"0xc", "0xa", "0xb"}
		for i, ref := range refs {
			require.NoError(t, st.SaveTransaction(ctx, store.JournaledTx{BatchID: b1.ID, Chain: "stub", Ref: ref, Raw: []byte{byte(i), 0xff}, Meta: json.RawMessage(fmt.Sprintf(`{"nonce":%d}`, i)), CreatedAt: at}))
			if i == 0 {
				require.NoError(t, st.SaveTransaction(ctx, store.JournaledTx{BatchID: b2.ID, Chain: "stub", Ref: "0xother", CreatedAt: at}))
			}
		}

		got, err := st.Transactions(ctx, b1.ID)
		require.NoError(t, err)
		require.Len(t, got, 3)
		for i, r := range got {
			assert.Equal(t, refs[i], r.Ref)
			assert.Equal(t, b1.ID, r.BatchID)
			assert.Equal(t, "stub", r.Chain)
			assert.Equal(t, []byte{byte(i), 0xff}, r.Raw)
			assert.JSONEq(t, fmt.Sprintf(`{"nonce":%d}`, i), string(r.Meta))
			assert.Equal(t, at, r.CreatedAt)
		}
		other, err := st.Transactions(ctx, b2.ID)
		require.NoError(t, err)
		require.Len(t, other, 1)
		assert.Equal(t, "0xother", other[0].Ref)
		assert.Empty(t, other[0].Meta)

		none, err := st.Transactions(ctx, b2.ID+100)
		require.NoError(t, err)
		assert.Empty(t, none)
	})
}

func TestUnconfirmedTransactionsListEveryBatchOnTheChainButConfirmedOnesOldestFirst(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		batch := func(digest, chain string) store.Batch {
			insert(t, st, store.NewEvidence{Digest: digestOf(digest), Chains: []string{chain}, Priority: 5})
			return formOne(t, st, chain, 10)
		}
		done, open, dead, other := batch("1", "etherlink"), batch("2", "etherlink"), batch("3", "etherlink"), batch("4", "solana")
		at := time.UnixMilli(1_700_000_000_000).UTC()
		save := func(b store.Batch, chain, ref string, ms int64) {
			require.NoError(t, st.SaveTransaction(ctx, store.JournaledTx{BatchID: b.ID, Chain: chain, Ref: ref, Raw: []byte(ref), CreatedAt: at.Add(time.Duration(ms) * time.Millisecond)}))
		}
		save(done, "etherlink", "0xdone", 0)
		save(dead, "etherlink", "0xdead", 1)
		save(open, "etherlink", "0xopen", 2)
		save(open, "etherlink", "0xbump", 3)
		save(other, "solana", "sig", 4)
		confirm(t, st, done, "0xdone", 7)
		require.NoError(t, st.DeadLetterBatch(ctx, dead.ID, "gave up"))

		got, err := st.UnconfirmedTransactions(ctx, "etherlink")
		require.NoError(t, err)
		var refs []string
		for _, r := range got {
			refs = append(refs, r.Ref)
			assert.Equal(t, []byte(r.Ref), r.Raw)
			assert.Equal(t, "etherlink", r.Chain)
		}
		assert.Equal(t, []string{"0xdead", "0xopen", "0xbump"}, refs, "a dead-lettered batch's transaction may still hold a nonce")
		assert.Equal(t, open.ID, got[1].BatchID)
	})
}

func TestReopeningTheStoreKeepsEverything(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		ctx := context.Background()
		where := db.Fresh(t)
		st := storetest.Open(t, where)
		keyed := insert(t, st, store.NewEvidence{Digest: digestOf("k"), Chains: []string{"stub"}, Priority: 2, IdempotencyKey: "key-1", Metadata: json.RawMessage(`{"a":1}`)})
		b := formOne(t, st, "stub", 10)
		require.NoError(t, st.SaveTransaction(ctx, store.JournaledTx{BatchID: b.ID, Chain: "stub", Ref: "0xr", CreatedAt: time.Now()}))
		root := confirm(t, st, b, "0xr", 11)
		waiting := insert(t, st, store.NewEvidence{Digest: digestOf("w"), Chains: []string{"stub"}, Priority: 5})
		before := listAll(t, st, "")
		require.NoError(t, st.Close())

		for range 2 { // twice: applying migrations again must be a no-op
			st = storetest.Open(t, where)
			assert.Equal(t, before, listAll(t, st, ""))
			got := get(t, st, keyed.ID)
			assert.Equal(t, store.StatusConfirmed, got.Status)
			assert.Equal(t, "key-1", got.IdempotencyKey)
			assert.JSONEq(t, `{"a":1}`, string(got.Metadata))
			assert.Equal(t, [32]byte(root), anchorOn(t, got, "stub").Root)
			txs, err := st.Transactions(ctx, b.ID)
			require.NoError(t, err)
			require.Len(t, txs, 1)
			assert.Equal(t, "0xr", txs[0].Ref)
			assert.Equal(t, store.StatusPending, get(t, st, waiting.ID).Status)
			n, err := st.PendingCount(ctx)
			require.NoError(t, err)
			assert.Equal(t, 1, n)

			// The idempotency key still answers after a restart.
			again, created, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf("other"), Chains: []string{"stub"}, Priority: 5, IdempotencyKey: "key-1"})
			require.NoError(t, err)
			assert.False(t, created)
			assert.Equal(t, keyed.ID, again.ID)
			require.NoError(t, st.Close())
		}
	})
}

func TestAStoreCanLiveInADirectoryWhoseNameLooksLikeURISyntax(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data #1 ?x=y %41")
	path := filepath.Join(dir, "keeper.db")
	st := storetest.Open(t, path)
	ev := insert(t, st, store.NewEvidence{Digest: digestOf("x"), Chains: []string{"stub"}, Priority: 5})
	require.NoError(t, st.Close())

	_, err := os.Stat(path)
	require.NoError(t, err, "the store file is where it was asked to be")
	st = storetest.Open(t, path)
	defer st.Close()
	assert.Equal(t, ev.ID, get(t, st, ev.ID).ID)
}

func TestListEvidencePagesInIntakeOrderAndRejectsForeignCursors(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		var ids []string
		for i := range 5 {
			ids = append(ids, insert(t, st, store.NewEvidence{Digest: digestOf(fmt.Sprint(i)), Chains: []string{"stub"}, Priority: 5}).ID)
		}
		var got []string
		cursor, pages := "", 0
		for {
			page, next, err := st.ListEvidence(ctx, store.ListFilter{Limit: 2, Cursor: cursor})
			require.NoError(t, err)
			pages++
			for _, ev := range page {
				got = append(got, ev.ID)
				assert.Len(t, ev.Anchors, 1, "listed evidence carries its anchors")
			}
			if next == "" {
				break
			}
			cursor = next
		}
		assert.Equal(t, ids, got)
		assert.Equal(t, 3, pages)

		for _, bad := range []string{"garbage", "%%%", "AAAA", "not a cursor at all"} {
			_, _, err := st.ListEvidence(ctx, store.ListFilter{Limit: 2, Cursor: bad})
			assert.True(t, errors.Is(err, store.ErrBadCursor), "cursor %q: %v", bad, err)
		}
	})
}

func TestListEvidenceWithoutALimitIsAnErrorNotACrash(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		insert(t, st, store.NewEvidence{Digest: digestOf("a"), Chains: []string{"stub"}, Priority: 5})
		for _, limit := range []int{0, -1} {
			evs, next, err := st.ListEvidence(context.Background(), store.ListFilter{Limit: limit})
			assert.Error(t, err, "limit %d", limit)
			assert.Empty(t, evs)
			assert.Empty(t, next)
		}
	})
}

func TestConcurrentInsertsAreEachStoredOnceEvenWhenOneOfThemFails(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		const n = 64
		var (
			wg   sync.WaitGroup
			ids  [n]string
			errs [n]error
		)
		start := make(chan struct{})
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				chains := []string{"stub"}
				if i == n/2 {
					chains = []string{"stub", "stub"} // a chain twice: this one insert fails
				}
				ev, _, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf(fmt.Sprint("group", i)), Chains: chains, Priority: 5})
				ids[i], errs[i] = ev.ID, err
			}()
		}
		close(start)
		wg.Wait()

		stored := map[string]bool{}
		for _, ev := range listAll(t, st, "") {
			stored[ev.ID] = true
		}
		for i := range n {
			if i == n/2 {
				assert.Error(t, errs[i])
				continue
			}
			require.NoError(t, errs[i], "insert %d", i)
			assert.True(t, stored[ids[i]], "insert %d was answered but not stored", i)
		}
		assert.Len(t, stored, n-1, "everything but the failed insert, each once")
	})
}

func TestPendingUpToCountsEachChainUpToTheCapWithItsOldestEvidence(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		st := db.Open(t)
		ctx := context.Background()
		var first store.Evidence
		for i := range 5 {
			ev, _, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf(fmt.Sprint("cap", i)), Chains: []string{"a", "b"}, Priority: 10 - i})
			require.NoError(t, err)
			if i == 0 {
				first = ev
			}
		}
		_, _, err := st.InsertEvidence(ctx, store.NewEvidence{Digest: digestOf("only-c"), Chains: []string{"c"}, Priority: 1})
		require.NoError(t, err)
		_, ok, err := st.FormBatch(ctx, "b", 10)
		require.NoError(t, err)
		require.True(t, ok)

		got, err := st.PendingUpTo(ctx, 3)
		require.NoError(t, err)
		require.Len(t, got, 2, "chain b has nothing pending any more")
		assert.Equal(t, 3, got["a"].Count, "counted up to the cap")
		assert.Equal(t, first.CreatedAt, got["a"].Oldest, "the oldest, whatever its priority")
		assert.Equal(t, 1, got["c"].Count)

		exact, err := st.PendingChains(ctx)
		require.NoError(t, err)
		assert.Equal(t, 5, exact["a"].Count)
		assert.Equal(t, exact["a"].Oldest, got["a"].Oldest)
	})
}
