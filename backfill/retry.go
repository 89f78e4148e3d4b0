package backfill

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/keeperhq/keeper/retry"
)

// Read attempts: every scanner call is an idempotent read, so a blip is
// retried the way DESIGN.md retries idempotent upstream calls (at most 3
// attempts, a uniform 100–250 ms pause between them). What still fails fails
// the scan attempt, and seed 002's schedule takes over.
//
// Each attempt gets CallTimeout: a node that stops answering fails the
// attempt instead of holding the scan (and its heartbeats) forever.
const (
	readAttempts = 3
	readPauseMin = 100 * time.Millisecond
	readPauseMax = 250 * time.Millisecond
)

// CallTimeout bounds one attempt of one read (a JSON-RPC call or batch).
var CallTimeout = time.Minute

// Retry runs read up to three times, each with its own CallTimeout.
// Permanent errors and the end of ctx are returned at once.
func Retry(ctx context.Context, read func(ctx context.Context) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, CallTimeout)
		err = read(actx)
		cancel()
		if err == nil || retry.IsPermanent(err) || ctx.Err() != nil || attempt == readAttempts {
			return err
		}
		pause := readPauseMin + rand.N(readPauseMax-readPauseMin)
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}
