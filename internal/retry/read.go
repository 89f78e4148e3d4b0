package retry

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"
)

// The short retry of idempotent upstream calls (docs/retries.md, upstream):
// at most ReadAttempts attempts, with a uniform pause of ReadPauseMin to
// ReadPauseMax between them. Calls that are not idempotent are not retried
// this way. What still fails is left to the caller's own schedule.
const (
	ReadAttempts = 3
	ReadPauseMin = 100 * time.Millisecond
	ReadPauseMax = 250 * time.Millisecond
)

// ErrStalled is the cause of an attempt's context when Reads.Stall cut the
// attempt off.
var ErrStalled = errors.New("the call made no progress within its stall timeout")

// Reads runs idempotent calls under the short retry. The zero value retries
// every error but a permanent one, with no timeout of its own.
type Reads struct {
	// Timeout, when set, bounds each attempt: its context ends this long
	// after the attempt began (context.DeadlineExceeded).
	Timeout time.Duration
	// Stall, when set, cancels an attempt (with cause ErrStalled) once it
	// has reported no progress for this long, so an answer that keeps
	// arriving is not cut off.
	Stall time.Duration
	// Check, when set, sees the error of every failed attempt (stalled: Stall
	// cut it off) and returns the error to go on with and whether another
	// attempt is worth it. Permanent errors are never retried, whatever it says.
	Check func(err error, stalled bool) (error, bool)
	// Retrying, when set, is called before each pause.
	Retrying func(err error)
}

// Read runs read under the short retry, each attempt bounded by timeout
// (none when 0).
func Read(ctx context.Context, timeout time.Duration, read func(ctx context.Context) error) error {
	return Reads{Timeout: timeout}.Do(ctx, func(ctx context.Context, _ func()) error { return read(ctx) })
}

// Do runs call up to ReadAttempts times. call reports progress (bytes of an
// answer read) through the function it is given; only Stall looks at it.
// Success, a permanent error, an error Check does not retry, the end of ctx
// and the last attempt's error are returned at once.
func (r Reads) Do(ctx context.Context, call func(ctx context.Context, progress func()) error) error {
	for attempt := 1; ; attempt++ {
		err, stalled := r.attempt(ctx, call)
		if err == nil {
			return nil
		}
		again := true
		if r.Check != nil {
			err, again = r.Check(err, stalled)
		}
		if !again || IsPermanent(err) || ctx.Err() != nil || attempt == ReadAttempts {
			return err
		}
		if r.Retrying != nil {
			r.Retrying(err)
		}
		t := time.NewTimer(ReadPauseMin + rand.N(ReadPauseMax-ReadPauseMin+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// attempt runs call once under the attempt's timeouts.
func (r Reads) attempt(ctx context.Context, call func(ctx context.Context, progress func()) error) (err error, stalled bool) {
	sctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	actx := sctx
	if r.Timeout > 0 {
		var stop context.CancelFunc
		actx, stop = context.WithTimeout(sctx, r.Timeout)
		defer stop()
	}
	progress := func() {}
	var watchdog *time.Timer
	if r.Stall > 0 {
		watchdog = time.AfterFunc(r.Stall, func() { cancel(ErrStalled) })
		progress = func() { watchdog.Reset(r.Stall) }
	}
	err = call(actx, progress)
	if watchdog != nil {
		watchdog.Stop()
	}
	return err, err != nil && errors.Is(context.Cause(sctx), ErrStalled)
}
