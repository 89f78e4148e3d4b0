package sweep_test

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/internal/sweep"
)

func TestAFailedPassIsTriedAgainSoonAndAWakeRunsOneAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		var at []time.Duration
		wake := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			sweep.Run(ctx, time.Hour, wake, func(context.Context) error {
				at = append(at, time.Since(start))
				if len(at) == 1 {
					return errors.New("store down")
				}
				return nil
			}, slog.New(slog.DiscardHandler), "pass failed")
		}()
		synctest.Wait()
		time.Sleep(sweep.Retry)
		synctest.Wait()
		assert.Equal(t, []time.Duration{0, sweep.Retry}, at, "the failed pass is tried again after Retry, not the interval")

		time.Sleep(time.Minute)
		wake <- struct{}{}
		synctest.Wait()
		assert.Equal(t, []time.Duration{0, sweep.Retry, sweep.Retry + time.Minute}, at, "woken, it runs at once")

		time.Sleep(time.Hour)
		synctest.Wait()
		assert.Len(t, at, 4, "then every interval")
		cancel()
		<-done
	})
}
