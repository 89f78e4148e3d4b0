package anchor_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/temporalfake"
	"github.com/keeperhq/keeper/internal/workflows"
)

// fakeTemporal is a Temporal frontend that refuses the first failFirst
// starts, as one that is down does, and records the rest.
func fakeTemporal(failFirst int) *temporalfake.Client {
	c := &temporalfake.Client{}
	c.FailNext(failFirst)
	return c
}

// starts lists the AnchorBatch workflows started, with their options.
func starts(c *temporalfake.Client) ([]client.StartWorkflowOptions, []workflows.AnchorBatchInput) {
	var opts []client.StartWorkflowOptions
	var inputs []workflows.AnchorBatchInput
	for _, s := range c.Starts() {
		opts, inputs = append(opts, s.Options), append(inputs, s.Input().(workflows.AnchorBatchInput))
	}
	return opts, inputs
}

func runDispatcher(t *testing.T, d *anchor.Dispatcher) chan store.Batch {
	t.Helper()
	started := make(chan store.Batch, 100)
	d.OnStart = func(b store.Batch) { started <- b }
	d.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err)
		case <-time.After(5 * time.Second):
			t.Error("dispatcher did not stop when its context ended")
		}
	})
	return started
}

func waitStart(t *testing.T, started chan store.Batch, within time.Duration) store.Batch {
	t.Helper()
	select {
	case b := <-started:
		return b
	case <-time.After(within):
		t.Fatalf("no batch workflow started within %s", within)
		return store.Batch{}
	}
}

func openTestStore(t *testing.T) *store.Store {
	t.Helper()
	st := storetest.SQLite(t)
	return st
}

func insertDigest(t *testing.T, st *store.Store, seed string, priority int, chains ...string) {
	t.Helper()
	_, _, err := st.InsertEvidence(context.Background(), store.NewEvidence{Digest: [32]byte([]byte(fmt.Sprintf("%-32s", seed))), Chains: chains, Priority: priority})
	require.NoError(t, err)
}

func TestTheDispatcherStartsOneAnchorWorkflowPerBatchAndRecordsItStarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		insertDigest(t, st, "a", 1, "stub")
		insertDigest(t, st, "b", 3, "stub")
		temporalClient := fakeTemporal(0)
		policy := workflows.AnchorPolicy{MaxAttempts: 7}
		started := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: temporalClient, MaxItems: 10, MaxWait: time.Hour, Sweep: time.Hour, Policy: policy})

		b := waitStart(t, started, 5*time.Second)
		assert.Equal(t, 2, b.Size)
		assert.Equal(t, 1, b.Priority)

		opts, inputs := starts(temporalClient)
		require.Len(t, opts, 1)
		assert.Equal(t, workflows.WorkflowID("stub", b.ID), opts[0].ID)
		assert.Equal(t, workflows.AnchorTaskQueue, opts[0].TaskQueue)
		assert.Equal(t, workflows.TaskPriority(1), opts[0].Priority.PriorityKey)
		assert.Equal(t, workflows.AnchorBatchInput{BatchID: b.ID, Chain: "stub", Size: 2, Priority: 1, Policy: policy,
			Revision: workflows.AnchorRevision}, inputs[0], "new batches run the current revision")

		got, err := st.GetBatch(context.Background(), b.ID)
		require.NoError(t, err)
		assert.Equal(t, store.BatchStarted, got.State)
		n, err := st.PendingCount(context.Background())
		require.NoError(t, err)
		assert.Zero(t, n)
	})
}

func TestNewEvidenceWakesTheDispatcherWithoutWaitingForTheSweep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		temporalClient := fakeTemporal(0)
		started := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: temporalClient, MaxItems: 10, MaxWait: time.Hour, Sweep: time.Hour})

		synctest.Wait() // it is idle
		inserted := time.Now()
		insertDigest(t, st, "late", 5, "stub")
		b := waitStart(t, started, 3*time.Second)
		assert.Equal(t, 1, b.Size)
		assert.LessOrEqual(t, time.Since(inserted), 10*time.Millisecond, "woken at once (the least gap between ticks), not at the sweep")
	})
}

func TestWhileABatchAwaitsSubmissionTheNextGrowsUntilMaxWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		inserted := time.Now()
		for i := range 3 {
			insertDigest(t, st, fmt.Sprint("e", i), 5, "stub")
		}
		temporalClient := fakeTemporal(0)
		started := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: temporalClient, MaxItems: 2, MaxWait: 300 * time.Millisecond, Sweep: time.Hour})

		first := waitStart(t, started, 3*time.Second)
		assert.Equal(t, 2, first.Size, "the first batch takes what is there, up to MaxItems")
		second := waitStart(t, started, 3*time.Second)
		assert.Equal(t, 1, second.Size)
		assert.Equal(t, 300*time.Millisecond, time.Since(inserted), "the lone evidence waited MaxWait for company while the first batch was unsubmitted")

		select {
		case b := <-started:
			t.Fatalf("unexpected third batch %+v", b)
		case <-time.After(100 * time.Millisecond):
		}
	})
}

func TestABatchWhoseWorkflowTemporalRefusedIsStartedLaterNotFormedAgain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		insertDigest(t, st, "x", 5, "stub")
		temporalClient := fakeTemporal(1)
		started := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: temporalClient, MaxItems: 10, MaxWait: time.Hour, Sweep: time.Hour})

		b := waitStart(t, started, 5*time.Second)
		opts, _ := starts(temporalClient)
		require.Len(t, opts, 1, "one successful start after the refused one")
		assert.Equal(t, workflows.WorkflowID("stub", b.ID), opts[0].ID)

		got, err := st.GetBatch(context.Background(), b.ID)
		require.NoError(t, err)
		assert.Equal(t, store.BatchStarted, got.State)
		formed, err := st.FormedBatches(context.Background())
		require.NoError(t, err)
		assert.Empty(t, formed)
		_, err = st.GetBatch(context.Background(), b.ID+1)
		assert.ErrorIs(t, err, store.ErrNotFound, "the evidence was not put into a second batch")
	})
}

func TestUnderLoadAChainsNextBatchWaitsMinGapAfterItsPreviousOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		insertDigest(t, st, "first", 5, "stub")
		insertDigest(t, st, "company", 5, "stub") // two at once: the chain is under load
		temporalClient := fakeTemporal(0)
		started := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: temporalClient, MaxItems: 10, MaxWait: time.Hour, MinGap: 300 * time.Millisecond, Sweep: time.Hour})

		first := waitStart(t, started, 3*time.Second)
		formed := time.Now()
		// The first batch is submitted at once, so only MinGap holds the next.
		require.NoError(t, st.MarkSubmitted(context.Background(), first.ID, [32]byte{1}, "tx"))
		insertDigest(t, st, "second", 5, "stub")
		insertDigest(t, st, "third", 5, "stub")

		second := waitStart(t, started, 3*time.Second)
		assert.Equal(t, 300*time.Millisecond, time.Since(formed), "the second batch waited for MinGap after the first")
		assert.Equal(t, 2, second.Size, "evidence arriving meanwhile shares one batch")
	})
}

func TestALoneEvidenceAfterABatchOfOneGoesOutAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		insertDigest(t, st, "lone", 5, "stub")
		temporalClient := fakeTemporal(0)
		started := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: temporalClient, MaxItems: 10, MaxWait: time.Hour, MinGap: time.Hour, Sweep: time.Hour})

		first := waitStart(t, started, 3*time.Second)
		require.NoError(t, st.MarkSubmitted(context.Background(), first.ID, [32]byte{1}, "tx"))
		insertDigest(t, st, "next", 5, "stub")
		second := waitStart(t, started, 3*time.Second)
		assert.Equal(t, 1, second.Size, "MinGap only holds a chain under load")
	})
}

func TestBacklogsOnTwoChainsAreDispatchedInTurn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		for i := range 4 {
			insertDigest(t, st, fmt.Sprint("both", i), 5, "a", "b")
		}
		temporalClient := fakeTemporal(0)
		started := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: temporalClient, MaxItems: 1, MaxWait: time.Hour, Sweep: time.Hour})

		perChain := map[string]int{}
		for range 4 {
			perChain[waitStart(t, started, 3*time.Second).Chain]++
		}
		assert.Equal(t, map[string]int{"a": 2, "b": 2}, perChain, "one evidence per batch: neither chain waits for the other's backlog")
	})
}

// Under load, a chain's batches are MinGap apart whichever API node formed
// them: a node that saw only its own batches formed one as soon as the
// other had, and two nodes made batches half the size.
func TestUnderLoadTwoDispatchersOnOneStoreKeepMinGapBetweenThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		insertDigest(t, st, "first", 5, "stub")
		insertDigest(t, st, "company", 5, "stub") // two at once: the chain is under load
		first := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: fakeTemporal(0), MaxItems: 10, MaxWait: time.Hour, MinGap: 300 * time.Millisecond, Sweep: time.Hour})
		a := waitStart(t, first, 3*time.Second)
		formed := time.Now()
		require.Equal(t, 2, a.Size)
		require.NoError(t, st.MarkSubmitted(context.Background(), a.ID, [32]byte{1}, "tx"))

		// A second node that formed nothing yet takes the next evidence.
		second := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: fakeTemporal(0), MaxItems: 10, MaxWait: time.Hour, MinGap: 300 * time.Millisecond, Sweep: 10 * time.Millisecond})
		insertDigest(t, st, "second", 5, "stub")
		insertDigest(t, st, "third", 5, "stub")
		var b store.Batch
		for b.ID == 0 || b.ID == a.ID {
			select {
			case b = <-first:
			case b = <-second:
			case <-time.After(3 * time.Second):
				t.Fatal("no batch for the second pair")
			}
		}
		assert.GreaterOrEqual(t, time.Since(formed), 300*time.Millisecond, "the next batch waited for MinGap after the other node's")
		assert.Equal(t, 2, b.Size, "evidence arriving meanwhile shares one batch")
	})
}
