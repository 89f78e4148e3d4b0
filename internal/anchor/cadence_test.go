package anchor_test

import (
	"context"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/store"
)

func every(d time.Duration) func(string) time.Duration {
	return func(string) time.Duration { return d }
}

// expectNoStart fails when a batch starts within d.
func expectNoStart(t *testing.T, started chan store.Batch, d time.Duration, why string) {
	t.Helper()
	select {
	case b := <-started:
		t.Fatalf("batch %d (%d evidence) started: %s", b.ID, b.Size, why)
	case <-time.After(d):
	}
}

func TestASteadyStreamGetsAtMostOneBatchPerIntervalAndTheFirstEvidenceGoesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		temporalClient := fakeTemporal(0)
		const interval = 400 * time.Millisecond
		started := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: temporalClient, MaxItems: 1000, MaxWait: time.Hour, Sweep: time.Hour, Interval: every(interval)})

		t0 := time.Now()
		insertDigest(t, st, "first", 5, "stub")
		first := waitStart(t, started, 3*time.Second)
		assert.Equal(t, 1, first.Size)
		assert.LessOrEqual(t, time.Since(t0), 10*time.Millisecond, "the first evidence after a quiet spell went out at once (the least gap between ticks)")
		// Every batch is submitted at once, so only the interval holds the next.
		require.NoError(t, st.MarkSubmitted(context.Background(), first.ID, [32]byte{1}, "tx"))

		// A steady trickle, 20 a second for 2 s: without the interval each
		// evidence would be a batch of its own.
		const n = 40
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := range n {
				insertDigest(t, st, fmt.Sprint("trickle", i), 5, "stub")
				time.Sleep(50 * time.Millisecond)
			}
		}()
		var batches []store.Batch
		got := 0
		for got < n {
			b := waitStart(t, started, 5*time.Second)
			require.NoError(t, st.MarkSubmitted(context.Background(), b.ID, [32]byte{1}, "tx"))
			batches = append(batches, b)
			got += b.Size
		}
		<-done
		elapsed := time.Since(t0)
		assert.Equal(t, n, got, "every evidence was batched")
		assert.LessOrEqual(t, len(batches)+1, int(elapsed/interval)+1, "at most one batch per interval over %s: %d batches", elapsed, len(batches)+1)
		assert.GreaterOrEqual(t, len(batches), 3, "the stream was not held past the interval")
	})
}

func TestAFullBatchAndPriorityOneGoBeforeTheIntervalIsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		temporalClient := fakeTemporal(0)
		cadence := anchor.NewCadence(every(time.Hour), []string{"stub"})
		started := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: temporalClient, MaxItems: 3, MaxWait: time.Hour, Sweep: time.Hour, Interval: every(time.Hour), Cadence: cadence})

		insertDigest(t, st, "opens the interval", 5, "stub")
		first := waitStart(t, started, 3*time.Second)
		require.NoError(t, st.MarkSubmitted(context.Background(), first.ID, [32]byte{1}, "tx"))

		insertDigest(t, st, "waits", 5, "stub")
		expectNoStart(t, started, 300*time.Millisecond, "an hour's interval holds the next batch")

		insertDigest(t, st, "urgent", 1, "stub")
		urgent := waitStart(t, started, 3*time.Second)
		assert.Equal(t, 2, urgent.Size, "priority 1 takes what waits with it")
		assert.Equal(t, 1, urgent.Priority)
		assert.Equal(t, 1.0, metric(t, cadence, "keeper_anchor_urgent_batches_total"))
		require.NoError(t, st.MarkSubmitted(context.Background(), urgent.ID, [32]byte{2}, "tx2"))

		for i := range 3 {
			insertDigest(t, st, fmt.Sprint("fills", i), 5, "stub")
		}
		full := waitStart(t, started, 3*time.Second)
		assert.Equal(t, 3, full.Size, "a full batch does not wait for the interval")
		assert.Equal(t, 1.0, metric(t, cadence, "keeper_anchor_urgent_batches_total"), "a full batch is not counted as urgent")
		assert.Equal(t, 3.0, metric(t, cadence, "keeper_anchor_batches_last_hour"))
		assert.Equal(t, 1.0, metric(t, cadence, "keeper_anchor_batches_per_hour_ceiling"))
	})
}

func TestARestartedDispatcherKeepsTheCadenceOfTheBatchesInTheStore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		temporalClient := fakeTemporal(0)
		insertDigest(t, st, "before the restart", 5, "stub")
		b, ok, err := st.FormBatch(context.Background(), "stub", 10)
		require.NoError(t, err)
		require.True(t, ok)
		require.NoError(t, st.MarkBatchStarted(context.Background(), b.ID))
		require.NoError(t, st.MarkSubmitted(context.Background(), b.ID, [32]byte{1}, "tx"))

		insertDigest(t, st, "after", 5, "stub")
		started := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: temporalClient, MaxItems: 10, MaxWait: time.Hour, Sweep: time.Hour, Interval: every(time.Hour)})
		expectNoStart(t, started, 300*time.Millisecond, "the batch formed before the restart opened an hour's interval")
	})
}

// metric reads one of the cadence's metrics (the stub chain's series).
func metric(t *testing.T, c *anchor.Cadence, name string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(c.Collectors()...)
	families, err := reg.Gather()
	require.NoError(t, err)
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

// Several API nodes each run a dispatcher on one store: they keep one
// interval between them, not one each.
func TestTwoDispatchersOnOneStoreKeepOneIntervalBetweenThem(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := openTestStore(t)
		const interval = 400 * time.Millisecond
		c1 := fakeTemporal(0)
		c2 := fakeTemporal(0)
		first := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: c1, MaxItems: 1000, MaxWait: time.Hour, Sweep: 20 * time.Millisecond, Interval: every(interval)})
		insertDigest(t, st, "a", 5, "stub")
		a := waitStart(t, first, 3*time.Second)
		require.NoError(t, st.MarkSubmitted(context.Background(), a.ID, [32]byte{1}, "tx"))
		second := runDispatcher(t, &anchor.Dispatcher{Store: st, Temporal: c2, MaxItems: 1000, MaxWait: time.Hour, Sweep: 20 * time.Millisecond, Interval: every(interval)})
		time.Sleep(interval + 50*time.Millisecond)

		// One of the two forms the next batch; the other must then wait an
		// interval after it, not after the batch it knew of.
		insertDigest(t, st, "b", 5, "stub")
		var b store.Batch
		select {
		case b = <-first:
		case b = <-second:
		case <-time.After(3 * time.Second):
			t.Fatal("no batch for the second evidence")
		}
		require.NoError(t, st.MarkSubmitted(context.Background(), b.ID, [32]byte{1}, "tx"))
		insertDigest(t, st, "c", 5, "stub")
		// Each node also starts every batch it finds formed but not started, so
		// the other node may start batch b's workflow once more (Temporal takes
		// one start per workflow id); only a new batch breaks the interval.
		hold := time.After(interval / 2)
		for {
			select {
			case c := <-first:
				require.Equal(t, b.ID, c.ID, "the first node started batch %d: the batch formed %v ago by either node must hold it", c.ID, time.Since(b.CreatedAt))
			case c := <-second:
				require.Equal(t, b.ID, c.ID, "the second node started batch %d: the batch formed %v ago by either node must hold it", c.ID, time.Since(b.CreatedAt))
			case <-hold:
				return
			}
		}
	})
}
