package anchor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/store"
)

// Back-pressure on intake (docs/api.md, "Back-pressure"): with pending
// the evidence waiting for a batch,
//
//   - pending ≥ MaxPending: priority 6–10 is refused at once (429
//     overloaded);
//   - pending ≥ MaxBacklog (the ceiling, 4 × MaxPending unless set):
//     priority 1–5 waits up to IntakeWait for room, then is refused (429
//     backlog_full). Below the ceiling it is taken at once.
//
// So pending never passes the ceiling (on one node; see backlog), and a
// flood of priority 1 makes its senders wait and retry instead of piling
// up faster than batches form.

// DefaultBacklogFactor makes MaxBacklog from MaxPending when it is not set.
const DefaultBacklogFactor = 4

// Back-pressure timing. Intake admits on the last count plus what it took
// in since. While that estimate is below half of MaxPending no decision
// depends on a count, so none is made; above it pending is counted again at
// most every countEvery, and never more than 1/countDuty of the time (a
// count reads every pending row, so with a deep backlog it is the store's
// largest reader: docs/benchmarks.md, 2026-11-27). While requests wait for
// room counts are at least countGap apart, and a count taking longer than
// countTimeout is taken as the store not answering.
const (
	countEvery   = 100 * time.Millisecond
	countDuty    = 10
	countGap     = 10 * time.Millisecond
	countTimeout = 2 * time.Second
	// backlogRetryAfter is the Retry-After (seconds) of an intake refused
	// for back-pressure.
	backlogRetryAfter = 1
)

// backlog admits new evidence against the pending count without a COUNT
// per request. Its estimate is the last count plus every evidence this node
// admitted that the count may not have seen (admitted since, or still being
// stored when it began): never less than what is pending, as far as this
// node's intake goes, so admitting on it never passes a limit; other nodes'
// intake since the last count is not in it, so with several API nodes the
// ceiling holds to within what they take in between two counts. Refusing
// waits for a count begun after the request arrived, so a stale estimate
// never refuses evidence there is room for.
type backlog struct {
	count      func(context.Context) (int, error)
	maxPending int
	ceiling    int
	wait       time.Duration

	mu       sync.Mutex
	base     int   // the last count that succeeded
	mark     int64 // admissions settled when that count began
	counted  bool  // base holds a count
	admitted int64 // admissions so far
	settled  int64 // admissions whose store call has returned
	started  int64 // counts begun so far; the running one's number while running
	finished int64 // number of the last count that ended
	lastErr  error // its error
	startAt  time.Time
	took     time.Duration // how long the last count took
	running  bool
	done     chan struct{} // closed when the running count ends
}

func newBacklog(count func(context.Context) (int, error), maxPending, ceiling int, wait time.Duration) *backlog {
	if ceiling < maxPending {
		ceiling = maxPending
	}
	return &backlog{count: count, maxPending: maxPending, ceiling: ceiling, wait: wait}
}

// refusal is why take refused an evidence: the code of its 429.
type refusal string

const (
	refusedPending refusal = "overloaded"   // priority 6–10 at MaxPending
	refusedBacklog refusal = "backlog_full" // priority 1–5 at the ceiling after waiting
)

// take decides each of priorities (new evidence, most urgent first): "" it
// is admitted, else why it is refused. It returns the number admitted, to
// hand to settle once their store call returns, and the estimate it decided
// on last. An error (the store could not be counted) refuses all of them,
// and nothing is to be settled.
func (b *backlog) take(ctx context.Context, priorities []int) (out []refusal, admitted int, est int, err error) {
	out = make([]refusal, len(priorities))
	decided := make([]bool, len(priorities))
	left := len(priorities)
	deadline := time.Now().Add(b.wait)
	b.mu.Lock()
	arrived := b.started // counts numbered above this began after the request arrived
	b.mu.Unlock()
	for {
		b.mu.Lock()
		fresh := b.finished > arrived
		if fresh && b.lastErr != nil && left > 0 {
			err := b.lastErr
			b.admitted -= int64(admitted) // never to be stored
			b.mu.Unlock()
			return nil, 0, 0, err
		}
		if b.counted {
			late := !time.Now().Before(deadline)
			est = b.base + int(b.admitted-b.mark)
			for i, p := range priorities {
				if decided[i] {
					continue
				}
				switch limit := b.limit(p); {
				case est < limit:
					est++
					b.admitted++
					admitted++
				case fresh && p > 5:
					out[i] = refusedPending
				case fresh && late:
					out[i] = refusedBacklog
				default:
					continue // wait for a count that may show room
				}
				decided[i] = true
				left--
			}
			if b.recount(est) {
				b.startCount()
			}
		}
		if left == 0 {
			b.mu.Unlock()
			return out, admitted, est, nil
		}
		// Wait for the next count, starting it once countGap allows.
		var next <-chan struct{}
		var pause time.Duration
		switch {
		case b.running:
			next = b.done
		case time.Since(b.startAt) >= countGap:
			b.startCount()
			next = b.done
		default:
			pause = countGap - time.Since(b.startAt)
		}
		b.mu.Unlock()
		if next == nil {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				b.release(admitted)
				return nil, 0, 0, ctx.Err()
			}
			continue
		}
		select {
		case <-next:
		case <-ctx.Done():
			b.release(admitted)
			return nil, 0, 0, ctx.Err()
		}
	}
}

// limit is the pending count at which evidence of priority p is no longer
// admitted at once.
func (b *backlog) limit(p int) int {
	if p > 5 {
		return b.maxPending
	}
	return b.ceiling
}

// release takes back n admissions that will not be stored.
func (b *backlog) release(n int) {
	b.mu.Lock()
	b.admitted -= int64(n)
	b.mu.Unlock()
}

// settle says the store call of n admitted evidence has returned: a count
// begun from now on sees those it stored.
func (b *backlog) settle(n int) {
	b.mu.Lock()
	b.settled += int64(n)
	b.mu.Unlock()
}

// recount says whether intake, having admitted up to the estimate est,
// should count pending again: not while est is below half of MaxPending
// (every evidence is admitted at once whatever the count), and not sooner
// than countEvery, or countDuty times as long as the last count took, after
// the last one began. b.mu is held.
func (b *backlog) recount(est int) bool {
	if b.counted && est < b.maxPending/2 {
		return false
	}
	return time.Since(b.startAt) >= max(countEvery, countDuty*b.took)
}

// startCount starts counting pending evidence in the background. b.mu is
// held.
func (b *backlog) startCount() {
	if b.running {
		return
	}
	b.running = true
	b.started++
	n, mark, done := b.started, b.settled, make(chan struct{})
	b.startAt, b.done = time.Now(), done
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), countTimeout)
		began := time.Now()
		pending, err := b.count(ctx)
		took := time.Since(began)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("count pending evidence: no answer within %s: %w", countTimeout, store.ErrUnavailable)
		}
		b.mu.Lock()
		if err == nil {
			b.base, b.mark, b.counted = pending, mark, true
		}
		b.finished, b.lastErr, b.running, b.took = n, err, false, took
		b.mu.Unlock()
		close(done)
	}()
}

// admit holds one evidence of priority p to back-pressure: nil when it may
// be stored (then h.backlog.settle(1) once the store has answered), else
// the answer.
func (h *HTTP) admit(ctx context.Context, p int) *httpapi.Error {
	out, _, est, err := h.backlog.take(ctx, []int{p})
	if err != nil {
		return httpapi.Internal(h.Logger, "count pending evidence", err)
	}
	if out[0] != "" {
		return h.refused(out[0], est, "priority")
	}
	return nil
}

// refused is the answer to evidence back-pressure refused while est
// evidence are pending.
func (h *HTTP) refused(why refusal, est int, field string) *httpapi.Error {
	if why == refusedPending {
		return overloaded(est, h.backlog.maxPending, field)
	}
	return &httpapi.Error{Status: http.StatusTooManyRequests, Code: string(refusedBacklog), Field: field, RetryAfter: backlogRetryAfter,
		Message: fmt.Sprintf("%d evidence are pending, at the ceiling of %d (KEEPER_MAX_BACKLOG): priority 1–5 waited %s for room and is refused; retry after Retry-After", est, h.backlog.ceiling, h.backlog.wait)}
}
