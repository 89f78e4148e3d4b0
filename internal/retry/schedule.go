package retry

import (
	"math/rand/v2"
	"time"
)

// Schedule is an exponential retry schedule:
//
//	delay(n) = min(Base·2^min(n−1, MaxDoublings), Cap)
//
// for the n-th retry (n = 1 after the first failure; n below 1 counts as 1),
// plus jitter: uniform in [0, Jitter), and uniform in [0, JitterPct % of the
// delay). A schedule may use either jitter or both.
type Schedule struct {
	Base         time.Duration
	Cap          time.Duration
	MaxDoublings int           // Base doubles at most this many times
	Jitter       time.Duration // absolute: uniform in [0, Jitter)
	JitterPct    int           // relative: uniform in [0, JitterPct % of the delay)
}

// Anchor is the schedule of anchor submit and confirm attempts
// (docs/retries.md, anchor): 5 s, 10 s, 20 s, … capped at 300 s, plus
// uniform jitter in [0, 1 s); the exponent stops growing after 20 doublings.
// KEEPER_RETRY_BASE_MS, KEEPER_RETRY_CAP_MS and KEEPER_RETRY_JITTER_MS
// override Base, Cap and Jitter.
var Anchor = Schedule{Base: 5 * time.Second, Cap: 300 * time.Second, MaxDoublings: 20, Jitter: time.Second}

// Backfill is the schedule of retries of a failed backfill item
// (docs/retries.md, backfill): 2 min, 4 min, 8 min, … capped at 60 min, plus
// up to 25 % jitter; the exponent stops growing after 30 doublings.
// KEEPER_BACKFILL_RETRY_BASE_MS, KEEPER_BACKFILL_RETRY_CAP_MS and
// KEEPER_BACKFILL_RETRY_JITTER_PCT override Base, Cap and JitterPct.
var Backfill = Schedule{Base: 2 * time.Minute, Cap: time.Hour, MaxDoublings: 30, JitterPct: 25}

// Webhook is the schedule of webhook delivery attempts (docs/retries.md,
// webhook): 5 s, 10 s, 20 s, … capped at 1 h, each wait shortened by a
// uniform share of up to 20 % (WebhookWait), so that deliveries failed
// together by one outage do not come back together; the exponent stops
// growing after 30 doublings. KEEPER_WEBHOOK_RETRY_BASE and
// KEEPER_WEBHOOK_RETRY_CAP override Base and Cap.
var Webhook = Schedule{Base: 5 * time.Second, Cap: time.Hour, MaxDoublings: 30, JitterPct: 20}

// BackfillMaxRetries is how many times a failed backfill item is retried
// before it is ABANDONED (KEEPER_BACKFILL_MAX_RETRIES overrides it).
const BackfillMaxRetries = 5

// Delay is the wait before retry n (1-based), without jitter. It never
// overflows: a delay past Cap is Cap.
func (s Schedule) Delay(n int) time.Duration {
	k := max(min(n-1, s.MaxDoublings), 0)
	if s.Base <= 0 || s.Base > s.Cap>>k {
		return s.Cap
	}
	return s.Base << k
}

// Next is Delay(n) with the schedule's jitter added.
func (s Schedule) Next(n int) time.Duration {
	d := s.Delay(n)
	j := time.Duration(int64(d) * int64(s.JitterPct) / 100)
	if j > 0 {
		d += rand.N(j)
	}
	if s.Jitter > 0 {
		d += rand.N(s.Jitter)
	}
	return d
}

// Within is Delay(n) less a uniform share of up to JitterPct % of it:
// jittered like Next, but never longer than Delay(n), so Cap stays the
// longest wait.
func (s Schedule) Within(n int) time.Duration {
	d := s.Delay(n)
	if j := time.Duration(int64(d) * int64(s.JitterPct) / 100); j > 0 {
		d -= rand.N(j)
	}
	return d
}

// After is the wait a server asked for with Retry-After, kept between Base
// (a receiver cannot have keeper post every second for days) and Cap (nor
// push the next attempt past the schedule's longest wait).
func (s Schedule) After(asked time.Duration) time.Duration {
	return min(max(asked, s.Base), s.Cap)
}
