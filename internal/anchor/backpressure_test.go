package anchor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/tcpfault"
	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// backPressured is a fixture whose API holds intake to a ceiling of
// pending evidence, waiting up to wait for room.
func backPressured(t *testing.T, maxPending, ceiling int, wait time.Duration) *fixture {
	t.Helper()
	f := newFixture(t, maxPending)
	f.anchor.MaxBacklog, f.anchor.IntakeWait = ceiling, wait
	f.serve(t)
	return f
}

func TestAtTheCeilingPriority1To5WaitsForRoomThenGets429BacklogFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const wait = 80 * time.Millisecond
		f := backPressured(t, 2, 4, wait)
		for i := range 4 {
			f.submit(t, fmt.Sprint("queued", i), 5)
		}

		start := time.Now()
		rec := f.post(t, map[string]any{"digest": hexDigest("urgent"), "chains": []string{"stub"}, "priority": 1})
		apitest.RequireRefused(t, rec, http.StatusTooManyRequests, "backlog_full", "priority")
		assert.Equal(t, "1", rec.Header().Get("Retry-After"))
		assert.GreaterOrEqual(t, time.Since(start), wait, "it waited for room first") // the bubble's clock
		assert.Equal(t, 4, f.pendingCount(t), "nothing was stored past the ceiling")
		apitest.RequireRefused(t, f.post(t, map[string]any{"digest": hexDigest("low"), "chains": []string{"stub"}, "priority": 6}),
			http.StatusTooManyRequests, "overloaded", "priority")

		body := f.do(t, http.MethodGet, "/metrics", "").Body.String()
		assert.Contains(t, body, `keeper_intake_rejected_total{reason="backlog_full"} 1`)
		assert.Contains(t, body, `keeper_intake_rejected_total{reason="overloaded"} 1`)
	})
}

func TestPriority1To5WaitingAtTheCeilingIsTakenOnceABatchMakesRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := backPressured(t, 2, 4, 5*time.Second)
		for i := range 4 {
			f.submit(t, fmt.Sprint("queued", i), 5)
		}
		answer := make(chan *httptest.ResponseRecorder, 1)
		go func() {
			answer <- f.post(t, map[string]any{"digest": hexDigest("urgent"), "chains": []string{"stub"}, "priority": 1})
		}()
		synctest.Wait() // the request is waiting for room
		select {
		case rec := <-answer:
			t.Fatalf("answered before there was room: %d %s", rec.Code, rec.Body.String())
		default:
		}
		_, ok, err := f.st.FormBatch(context.Background(), "stub", 100)
		require.NoError(t, err)
		require.True(t, ok)
		rec := <-answer
		require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
		assert.Equal(t, 1, f.pendingCount(t))
	})
}

func TestABatchAtTheCeilingTakesTheMostUrgentItemsThatFitAndRefusesTheRestEach(t *testing.T) {
	f := backPressured(t, 2, 3, 0)
	f.submit(t, "queued 1", 5)
	f.submit(t, "queued 2", 5)

	rec := f.postBatch(t,
		item("normal", "priority", 5),
		item("urgent", "priority", 1),
		item("low", "priority", 8),
		item("high", "priority", 2),
	)
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	got := apitest.Decode[struct{ Items []batchItemJSON }](t, rec).Items
	requireItemRefused(t, got[0], 429, "backlog_full", "items[0].priority")
	requireItemTaken(t, got[1], http.StatusAccepted)
	requireItemRefused(t, got[2], 429, "overloaded", "items[2].priority")
	requireItemRefused(t, got[3], 429, "backlog_full", "items[3].priority")
	assert.Equal(t, 3, f.pendingCount(t))
}

// anchorer stands in for the dispatcher and the anchoring workflow, store
// side only: it forms a batch of at most maxItems every interval and marks
// it submitted and confirmed at once, as the activities would.
func anchorer(ctx context.Context, t *testing.T, st *store.Store, maxItems int, every time.Duration) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			anchorOnce(t, st, maxItems)
		}
	}()
	return done
}

// anchorOnce forms, submits and confirms one batch; false when none formed.
func anchorOnce(t *testing.T, st *store.Store, maxItems int) bool {
	ctx := context.Background()
	b, ok, err := st.FormBatch(ctx, "stub", maxItems)
	if !assert.NoError(t, err) || !ok {
		return false
	}
	ref := fmt.Sprint("tx-", b.ID)
	assert.NoError(t, st.MarkSubmitted(ctx, b.ID, [32]byte{1}, ref))
	assert.NoError(t, st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: ref, Block: uint64(b.ID), BlockTime: time.Now()}))
	return true
}

// A flood of priority 1 arrives far faster than batches form: the pending
// count never passes the ceiling, the senders are told to retry (429
// backlog_full), and every evidence that got 202 is confirmed in the end.
// The dispatcher and the chain are stood in for by anchorer (the store's
// own batch formation and confirmation), so no Temporal runs.
func TestAFloodOfPriority1NeverPilesUpPastTheCeilingAndEverythingTakenIsConfirmed(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) {
		const maxPending, ceiling = 40, 160
		st := db.Open(t)
		f := fixtureOn(t, st, maxPending, "stub")
		f.anchor.MaxBacklog, f.anchor.IntakeWait = ceiling, 20*time.Millisecond
		srv := httptest.NewServer(f.handler())
		defer srv.Close()

		ctx, stop := context.WithCancel(context.Background())
		defer stop()
		var (
			mu       sync.Mutex
			taken    []string
			answered = map[int]int{}
			peak     int
		)
		// Each sender posts batches of 40 priority 1 evidence and single
		// ones in turn, as fast as it is answered.
		send := func(path, body string) {
			resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
			if err != nil {
				return
			}
			defer resp.Body.Close()
			mu.Lock()
			defer mu.Unlock()
			// The pending count is highest right after an intake: read it at every answer.
			if n, err := st.PendingCount(context.Background()); err == nil {
				peak = max(peak, n)
			}
			if path == "/v1/evidence" {
				var ev struct{ ID string }
				json.NewDecoder(resp.Body).Decode(&ev)
				answered[resp.StatusCode]++
				if resp.StatusCode == http.StatusAccepted {
					taken = append(taken, ev.ID)
				}
				return
			}
			var b struct{ Items []batchItemJSON }
			json.NewDecoder(resp.Body).Decode(&b)
			answered[resp.StatusCode]++
			for _, it := range b.Items {
				answered[it.Status]++
				if it.Status == http.StatusAccepted {
					taken = append(taken, it.ID)
				}
			}
		}
		var senders sync.WaitGroup
		for s := range 4 {
			senders.Add(1)
			go func() {
				defer senders.Done()
				for i := 0; ctx.Err() == nil; i++ {
					digest := func(k int) string { return hexDigest(fmt.Sprint(db.Name, s, "/", i, "/", k)) }
					if i%2 == 0 {
						send("/v1/evidence", fmt.Sprintf(`{"digest":%q,"chains":["stub"],"priority":1}`, digest(0)))
						continue
					}
					items := make([]string, 40)
					for k := range items {
						items[k] = fmt.Sprintf(`{"digest":%q,"chains":["stub"],"priority":1}`, digest(k))
					}
					send("/v1/evidence/batch", `{"items":[`+strings.Join(items, ",")+`]}`)
				}
			}()
		}
		anchoring := anchorer(ctx, t, st, 20, 100*time.Millisecond) // 200/s at most: slower than the senders
		// Batches formed while the flood went on: more was taken than the ceiling holds.
		refusedWhileAnchoring := func() bool {
			mu.Lock()
			defer mu.Unlock()
			return answered[http.StatusTooManyRequests] >= 20 && len(taken) > 2*ceiling
		}
		assert.Eventually(t, refusedWhileAnchoring, 30*time.Second, 20*time.Millisecond, "senders faster than batches are told to retry")
		stop()
		senders.Wait()
		<-anchoring

		mu.Lock()
		defer mu.Unlock()
		t.Logf("answers %v, peak pending %d", answered, peak)
		assert.LessOrEqual(t, peak, ceiling, "the pending count stayed within the ceiling")
		assert.Len(t, taken, answered[http.StatusAccepted])
		assert.Empty(t, answered[http.StatusInternalServerError])
		require.NotEmpty(t, taken)

		for anchorOnce(t, st, 1000) {
		}
		for _, id := range taken {
			ev, err := st.GetEvidence(context.Background(), id)
			require.NoError(t, err)
			require.Equal(t, store.StatusConfirmed, ev.Status, "evidence %s", id)
		}
	})
}

// While PostgreSQL cannot be reached (the proxy between it and keeper cut,
// as a stopped server would be), the API answers 503 store_unavailable with
// Retry-After, never 500; once it is back, intake works again and every
// evidence that got 202, before, during or after, is in the store and gets
// confirmed.
func TestWhileTheStoreIsUnreachableEveryAnswerIs503StoreUnavailableAndNothingTakenIsLost(t *testing.T) {
	direct := storetest.PostgresURL(t)
	u, err := url.Parse(direct)
	require.NoError(t, err)
	proxy, err := tcpfault.Start(u.Host)
	require.NoError(t, err)
	defer proxy.Close()
	u.Host = proxy.Addr()
	st := storetest.Open(t, u.String())
	f := fixtureOn(t, st, 1000, "stub")

	// A steady sender of keyed evidence, as a client would send it.
	var (
		mu       sync.Mutex
		taken    []string
		answered = map[int]int{}
		cut      atomic.Bool
		duringOK int
		restored atomic.Bool
		afterOK  int // 202s sent after the store came back
	)
	// sent waits until the steady sender has had n answers that count.
	sent := func(n int, count func() int, what string) {
		t.Helper()
		require.Eventually(t, func() bool {
			mu.Lock()
			defer mu.Unlock()
			return count() >= n
		}, 30*time.Second, 5*time.Millisecond, what)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sending := make(chan struct{})
	pace := time.NewTicker(5 * time.Millisecond)
	defer pace.Stop()
	go func() {
		defer close(sending)
		for i := 0; ctx.Err() == nil; i++ {
			rec := f.doWith(t, http.MethodPost, "/v1/evidence", fmt.Sprintf(`{"digest":%q,"chains":["stub"]}`, hexDigest(fmt.Sprint("steady", i))),
				map[string]string{"Idempotency-Key": fmt.Sprint("steady-", i)})
			mu.Lock()
			answered[rec.Code]++
			if rec.Code == http.StatusAccepted {
				var ev struct{ ID string }
				json.Unmarshal(rec.Body.Bytes(), &ev)
				taken = append(taken, ev.ID)
				if cut.Load() {
					duringOK++
				}
				if restored.Load() {
					afterOK++
				}
			}
			if rec.Code == http.StatusServiceUnavailable {
				assert.NotEmpty(t, rec.Header().Get("Retry-After"))
				assert.Contains(t, rec.Body.String(), `"store_unavailable"`)
			}
			mu.Unlock()
			select { // a client's pace, not a flood
			case <-ctx.Done():
			case <-pace.C:
			}
		}
	}()

	sent(5, func() int { return answered[http.StatusAccepted] }, "the steady sender is taken before the cut")
	before := f.submit(t, "before the cut", 5)
	proxy.Cut()
	cut.Store(true)

	requireUnavailable := func(rec *httptest.ResponseRecorder) {
		t.Helper()
		apitest.RequireRefused(t, rec, http.StatusServiceUnavailable, "store_unavailable", "")
		assert.Equal(t, "2", rec.Header().Get("Retry-After"))
	}
	requireUnavailable(f.post(t, map[string]any{"digest": hexDigest("during"), "chains": []string{"stub"}, "priority": 1}))
	requireUnavailable(f.post(t, map[string]any{"digest": hexDigest("during low"), "chains": []string{"stub"}, "priority": 9}))
	requireUnavailable(f.do(t, http.MethodGet, "/v1/evidence/"+before.ID, ""))
	requireUnavailable(f.do(t, http.MethodGet, "/v1/evidence?status=pending", ""))
	requireUnavailable(f.do(t, http.MethodPost, "/v1/evidence/"+before.ID+"/retry", ""))
	bulk := f.postBatch(t, item("during bulk 1"), item("during bulk 2", "priority", 2))
	if bulk.Code == http.StatusMultiStatus {
		for _, it := range apitest.Decode[struct{ Items []batchItemJSON }](t, bulk).Items {
			requireItemRefused(t, it, http.StatusServiceUnavailable, "store_unavailable", fmt.Sprintf("items[%d]", it.Index))
		}
		assert.Equal(t, "2", bulk.Header().Get("Retry-After"))
	} else {
		requireUnavailable(bulk)
	}
	ready := f.do(t, http.MethodGet, "/readyz", "")
	assert.Equal(t, http.StatusServiceUnavailable, ready.Code)
	metrics := f.do(t, http.MethodGet, "/metrics", "")
	assert.Equal(t, http.StatusOK, metrics.Code, "metrics are still served")
	assert.Regexp(t, `keeper_intake_rejected_total\{reason="store_unavailable"\} [1-9]`, metrics.Body.String())
	sent(3, func() int { return answered[http.StatusServiceUnavailable] }, "the steady sender is refused while the store is away")

	require.NoError(t, proxy.Restore())
	cut.Store(false)
	restored.Store(true)
	require.Eventually(t, func() bool {
		rec := f.post(t, map[string]any{"digest": hexDigest("after"), "chains": []string{"stub"}})
		return rec.Code == http.StatusAccepted
	}, 10*time.Second, 50*time.Millisecond, "intake works again")
	sent(5, func() int { return afterOK }, "the steady sender is taken again")
	stop()
	<-sending

	mu.Lock()
	defer mu.Unlock()
	t.Logf("steady sender's answers: %v (202 while cut: %d)", answered, duringOK)
	assert.Empty(t, answered[http.StatusInternalServerError], "no 500 while the store was away")
	assert.Positive(t, answered[http.StatusServiceUnavailable])
	for code := range answered {
		assert.Contains(t, []int{http.StatusAccepted, http.StatusServiceUnavailable}, code)
	}

	// Everything taken is there, read past the proxy, and is confirmed.
	check := storetest.Open(t, direct)
	for anchorOnce(t, check, 1000) {
	}
	for _, id := range append(taken, before.ID) {
		ev, err := check.GetEvidence(context.Background(), id)
		require.NoError(t, err, "evidence %s got 202", id)
		assert.Equal(t, store.StatusConfirmed, ev.Status, "evidence %s", id)
	}
}
