package retry

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var errBlip = errors.New("connection reset")

func TestAFailingReadIsAttemptedThreeTimesWithPausesOfAtLeast100ms(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		start := time.Now()
		err := Read(context.Background(), 0, func(context.Context) error { calls++; return errBlip })
		require.ErrorIs(t, err, errBlip)
		assert.Equal(t, 3, calls)
		took := time.Since(start) // the bubble's clock: the two pauses and nothing else
		assert.GreaterOrEqual(t, took, 2*ReadPauseMin)
		assert.LessOrEqual(t, took, 2*ReadPauseMax)
	})
}

func TestAReadThatRecoversSucceeds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := Read(context.Background(), 0, func(context.Context) error {
			calls++
			if calls < 3 {
				return errBlip
			}
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, 3, calls)
	})
}

func TestAPermanentErrorIsNotRetried(t *testing.T) {
	calls := 0
	err := Read(context.Background(), 0, func(context.Context) error { calls++; return Permanent(errBlip) })
	require.True(t, IsPermanent(err))
	assert.Equal(t, 1, calls)
}

func TestAPermanentErrorIsNotRetriedEvenWhenCheckWouldRetryIt(t *testing.T) {
	calls := 0
	r := Reads{Check: func(err error, _ bool) (error, bool) { return err, true }}
	err := r.Do(context.Background(), func(context.Context, func()) error { calls++; return Permanent(errBlip) })
	require.True(t, IsPermanent(err))
	assert.Equal(t, 1, calls)
}

func TestTheEndOfTheContextStopsTheRetries(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	err := Read(ctx, 0, func(context.Context) error { calls++; cancel(); return errBlip })
	require.ErrorIs(t, err, errBlip)
	assert.Equal(t, 1, calls)
}

func TestTheEndOfTheContextCutsThePauseShort(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		r := Reads{Retrying: func(error) { cancel() }}
		start := time.Now()
		err := r.Do(ctx, func(context.Context, func()) error { calls++; return errBlip })
		require.ErrorIs(t, err, errBlip)
		assert.Equal(t, 1, calls)
		assert.Zero(t, time.Since(start), "no pause at all")
	})
}

func TestEachAttemptGetsItsOwnTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := Read(context.Background(), 20*time.Millisecond, func(ctx context.Context) error {
			calls++
			<-ctx.Done()
			return ctx.Err()
		})
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 3, calls)
	})
}

func TestCheckDecidesWhatIsRetriedAndRetryingIsToldOfEachRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		calls, retries := 0, 0
		wrapped := errors.New("wrapped")
		r := Reads{
			Check:    func(err error, _ bool) (error, bool) { return errors.Join(wrapped, err), calls < 2 },
			Retrying: func(error) { retries++ },
		}
		err := r.Do(context.Background(), func(context.Context, func()) error { calls++; return errBlip })
		require.ErrorIs(t, err, wrapped)
		require.ErrorIs(t, err, errBlip)
		assert.Equal(t, 2, calls)
		assert.Equal(t, 1, retries)
	})
}

func TestAStalledAttemptIsCutOffAndReportedAsStalled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var stalls []bool
		r := Reads{
			Stall: 20 * time.Millisecond,
			Check: func(err error, stalled bool) (error, bool) { stalls = append(stalls, stalled); return err, true },
		}
		err := r.Do(context.Background(), func(ctx context.Context, _ func()) error {
			<-ctx.Done()
			return ctx.Err()
		})
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, []bool{true, true, true}, stalls)
	})
}

func TestProgressKeepsASlowAnswerGoing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := Reads{Stall: 200 * time.Millisecond}
		calls := 0
		err := r.Do(context.Background(), func(ctx context.Context, progress func()) error {
			calls++
			for range 15 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(20 * time.Millisecond):
					progress()
				}
			}
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, 1, calls, "300 ms of steady progress outlasts a 200 ms stall timeout")
	})
}
