// Package sweep runs a dispatcher's pass over the store on an interval: the
// safety net that hands stored work to Temporal when no event woke it.
package sweep

import (
	"context"
	"log/slog"
	"time"
)

// Retry is how soon a pass that failed (the store or Temporal down or
// overloaded) is tried again, when the interval is longer.
const Retry = time.Second

// Run runs pass every interval, or at once when woken, until ctx is done;
// a pass that fails is logged with failed as its message and tried again
// after at most Retry. A nil wake never wakes.
func Run(ctx context.Context, every time.Duration, wake <-chan struct{}, pass func(context.Context) error, log *slog.Logger, failed string) {
	for {
		wait := every
		if err := pass(ctx); err != nil {
			if ctx.Err() != nil {
				return
			}
			log.Warn(failed, "error", err)
			wait = min(wait, Retry)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-wake:
		case <-t.C:
		}
		t.Stop()
	}
}
