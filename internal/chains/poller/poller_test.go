package poller

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThousandWaitersNeedAtMostFourCallsPerRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var maxSent, concurrent, maxConcurrent atomic.Int64
		lookup := func(ctx context.Context, ids []string) (map[string]int, error) {
			c := concurrent.Add(1)
			defer concurrent.Add(-1)
			for {
				m := maxConcurrent.Load()
				if c <= m || maxConcurrent.CompareAndSwap(m, c) {
					break
				}
			}
			if int64(len(ids)) > maxSent.Load() {
				maxSent.Store(int64(len(ids)))
			}
			time.Sleep(5 * time.Millisecond)
			out := map[string]int{}
			for _, id := range ids {
				var n int
				fmt.Sscanf(id, "sig%d", &n)
				if n%2 == 0 {
					out[id] = n // odd ids stay unknown
				}
			}
			out["never-asked"] = -1
			return out, nil
		}
		p := New[int](lookup, Options{MaxBatch: 256, Connections: 4, Interval: 100 * time.Millisecond})
		defer p.Close()

		var wg sync.WaitGroup
		var ready sync.WaitGroup
		results := make([]map[string]int, 1000)
		ready.Add(1000)
		for i := 0; i < 1000; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				ready.Done()
				res, err := p.Check(context.Background(), []string{fmt.Sprintf("sig%d", i)}, time.Now())
				assert.NoError(t, err)
				results[i] = res
			}(i)
		}
		ready.Wait()
		wg.Wait()

		rounds := p.Rounds()
		require.GreaterOrEqual(t, rounds, int64(1))
		assert.LessOrEqual(t, float64(p.Calls())/float64(rounds), 4.0, "calls per round with 1000 in flight")
		assert.LessOrEqual(t, maxSent.Load(), int64(256))
		assert.LessOrEqual(t, maxConcurrent.Load(), int64(4))
		for i, res := range results {
			id := fmt.Sprintf("sig%d", i)
			if i%2 == 0 {
				assert.Equal(t, map[string]int{id: i}, res)
			} else {
				assert.Empty(t, res, "unknown ids come back as missing (pending)")
			}
			assert.NotContains(t, res, "never-asked")
		}
		t.Logf("1000 waiters: %d rounds, %d calls", rounds, p.Calls())
	})
}

func TestOldestCheckedFirstThenSubmissionOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var sent [][]string
		p := New[bool](func(ctx context.Context, ids []string) (map[string]bool, error) {
			mu.Lock()
			sent = append(sent, append([]string(nil), ids...))
			mu.Unlock()
			return nil, nil
		}, Options{MaxBatch: 10, Connections: 1, Interval: time.Hour})
		defer p.Close()

		base := time.Now()
		// b was checked once already; a and c never, c submitted before a.
		done := make(chan struct{})
		go func() {
			p.Check(context.Background(), []string{"b"}, base.Add(-time.Hour))
			close(done)
		}()
		require.Eventually(t, func() bool { p.mu.Lock(); defer p.mu.Unlock(); return len(p.waiting) == 1 }, time.Second, time.Millisecond)
		p.Trigger()
		<-done

		var wg sync.WaitGroup
		for _, w := range []struct {
			id  string
			sub time.Time
		}{{"a", base.Add(2 * time.Second)}, {"c", base.Add(time.Second)}, {"b", base.Add(-time.Hour)}} {
			wg.Add(1)
			go func() { defer wg.Done(); p.Check(context.Background(), []string{w.id}, w.sub) }()
		}
		require.Eventually(t, func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			n := 0
			for _, e := range p.waiting {
				n += len(e.result)
			}
			return n == 3
		}, time.Second, time.Millisecond)
		p.Trigger()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, sent, 2)
		assert.Equal(t, []string{"c", "a", "b"}, sent[1], "never-checked first (by submission), then the least recently checked")
	})
}

func TestLookupErrorReachesEveryWaiterOfThatCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("rpc down")
		p := New[int](func(ctx context.Context, ids []string) (map[string]int, error) { return nil, boom }, Options{Interval: 10 * time.Millisecond})
		defer p.Close()
		_, err := p.Check(context.Background(), []string{"x", "y"}, time.Now())
		assert.ErrorIs(t, err, boom)

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = p.Check(ctx, []string{"z"}, time.Now())
		assert.ErrorIs(t, err, context.Canceled)
	})
}

func TestANewBlockStartsARoundWithoutWaitingForTheInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var head atomic.Uint64
		head.Store(10)
		p := New[bool](func(ctx context.Context, ids []string) (map[string]bool, error) {
			return map[string]bool{ids[0]: true}, nil
		}, Options{Interval: time.Hour, HeadInterval: 5 * time.Millisecond, Head: func(context.Context) (uint64, error) { return head.Load(), nil }})
		defer p.Close()

		got := make(chan map[string]bool, 1)
		go func() {
			res, _ := p.Check(context.Background(), []string{"tx"}, time.Now())
			got <- res
		}()
		time.Sleep(50 * time.Millisecond)
		// The first head seen counts as new; afterwards only a higher head triggers.
		select {
		case res := <-got:
			assert.True(t, res["tx"])
		case <-time.After(10 * time.Second):
			t.Fatal("no round although the head moved")
		}
		rounds := p.Rounds()
		go p.Check(context.Background(), []string{"tx2"}, time.Now())
		time.Sleep(100 * time.Millisecond)
		assert.Equal(t, rounds, p.Rounds(), "an unchanged head starts no round")
		head.Store(11)
		require.Eventually(t, func() bool { return p.Rounds() > rounds }, 10*time.Second, time.Millisecond)
	})
}

func TestWhileAnyoneWaitsAHeadThatMovesAtEveryProbeCostsOneRoundPerProbeAndNothingMore(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var head, probes atomic.Uint64
		const every, interval = 20 * time.Millisecond, 50 * time.Millisecond
		p := New[bool](func(ctx context.Context, ids []string) (map[string]bool, error) {
			return nil, nil // never final: the waiter keeps waiting
		}, Options{Interval: interval, HeadInterval: every, Head: func(context.Context) (uint64, error) {
			probes.Add(1)
			return head.Add(1), nil // a new block at every probe, as on EtherLink or Solana
		}})
		defer p.Close()

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			for ctx.Err() == nil {
				p.Check(ctx, []string{"tx"}, time.Now())
			}
		}()
		time.Sleep(time.Second)
		synctest.Wait() // the round of this instant, if any, is over
		rounds, heads, calls := p.Rounds(), probes.Load(), p.Calls()
		require.Greater(t, heads, uint64(10))
		// Without the round on a new head putting off the timed one, every
		// Interval would add a round of its own: 20 more a second here.
		assert.LessOrEqual(t, rounds, int64(heads)+1, "one round per new head, none on the Interval as well")
		assert.LessOrEqual(t, calls, rounds, "one call per round for one waiting id")
		t.Logf("1 s waiting: %d head probes, %d rounds", heads, rounds)
	})
}

func TestNobodyWaitingCostsNoCallAtAll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls, probes atomic.Int64
		p := New[bool](func(ctx context.Context, ids []string) (map[string]bool, error) {
			calls.Add(1)
			return nil, nil
		}, Options{Interval: 5 * time.Millisecond, HeadInterval: time.Millisecond, Head: func(context.Context) (uint64, error) {
			return uint64(probes.Add(1)), nil
		}})
		defer p.Close()
		time.Sleep(200 * time.Millisecond)
		assert.Zero(t, calls.Load(), "no status call while nobody waits")
		assert.Zero(t, probes.Load(), "no head probe while nobody waits")
	})
}
