package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestTheAnchorScheduleDoublesFromFiveSecondsUpToFiveMinutes(t *testing.T) {
	for n, want := range map[int]time.Duration{
		1: 5 * time.Second, 2: 10 * time.Second, 3: 20 * time.Second, 4: 40 * time.Second,
		5: 80 * time.Second, 6: 160 * time.Second, 7: 300 * time.Second, 1000: 300 * time.Second,
	} {
		assert.Equal(t, want, Anchor.Delay(n), "retry %d", n)
	}
	assert.Equal(t, 5*time.Second, Anchor.Delay(0), "before any failure the first delay applies")
}

func TestTheAnchorJitterIsUnderOneSecond(t *testing.T) {
	for n := 1; n <= 8; n++ {
		for range 200 {
			d := Anchor.Next(n)
			assert.GreaterOrEqual(t, d, Anchor.Delay(n))
			assert.Less(t, d, Anchor.Delay(n)+time.Second)
		}
	}
}

func TestTheAnchorExponentStopsGrowingAfterTwentyDoublings(t *testing.T) {
	s := Anchor
	s.Base, s.Cap = time.Millisecond, 100*time.Hour
	assert.Equal(t, time.Millisecond<<20, s.Delay(21))
	assert.Equal(t, time.Millisecond<<20, s.Delay(30))
}

func TestTheBackfillScheduleDoublesFromTwoMinutesUpToAnHour(t *testing.T) {
	for n, want := range map[int]time.Duration{
		1: 2 * time.Minute, 2: 4 * time.Minute, 3: 8 * time.Minute, 4: 16 * time.Minute,
		5: 32 * time.Minute, 6: time.Hour, 1000: time.Hour,
	} {
		assert.Equal(t, want, Backfill.Delay(n), "retry %d", n)
	}
	assert.Equal(t, 5, BackfillMaxRetries)
}

func TestTheBackfillJitterIsAtMostAQuarterOfTheDelay(t *testing.T) {
	for n := 1; n <= 7; n++ {
		for range 200 {
			d, base := Backfill.Next(n), Backfill.Delay(n)
			assert.GreaterOrEqual(t, d, base)
			assert.LessOrEqual(t, d, base+base/4)
		}
	}
}

func TestNoJitterMeansTheBareDelay(t *testing.T) {
	s := Schedule{Base: time.Second, Cap: time.Minute, MaxDoublings: 10}
	assert.Equal(t, 4*time.Second, s.Next(3))
}

func TestHugeBasesAndRetryNumbersNeverOverflow(t *testing.T) {
	s := Schedule{Base: 1<<40 + 1, Cap: 1 << 62, MaxDoublings: 30}
	assert.Equal(t, time.Duration(1<<62), s.Delay(30))
	assert.Equal(t, time.Duration(1<<40+1)<<21, s.Delay(22))
}

func TestWebhookWaitsAreJitteredBelowTheirDelaySoTheCapStaysTheLongestWait(t *testing.T) {
	for n := 1; n <= 12; n++ {
		seen := map[time.Duration]bool{}
		for range 200 {
			d, full := Webhook.Within(n), Webhook.Delay(n)
			assert.LessOrEqual(t, d, full, "retry %d", n)
			assert.Greater(t, d, full-full/5, "retry %d", n)
			seen[d] = true
		}
		assert.Greater(t, len(seen), 100, "retry %d: the waits are spread, not one value", n)
	}
	assert.Equal(t, time.Hour, Webhook.Delay(1000))
}

func TestARetryAfterIsKeptBetweenTheBaseAndTheCap(t *testing.T) {
	assert.Equal(t, 2*time.Minute, Webhook.After(2*time.Minute))
	assert.Equal(t, time.Hour, Webhook.After(48*time.Hour), "a receiver cannot push an attempt past the cap")
	assert.Equal(t, 5*time.Second, Webhook.After(0), "nor ask for an attempt every second")
	assert.Equal(t, 5*time.Second, Webhook.After(-time.Minute), "a date in the past is the base")
}
