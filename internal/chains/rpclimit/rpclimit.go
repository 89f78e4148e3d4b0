// Package rpclimit paces the requests keeper sends to one JSON-RPC
// endpoint. Public endpoints limit callers (EtherLink's: 1,000 requests a
// minute) and answer 429 beyond that; every client of an endpoint in the
// process (the status poller, the submitter, the backfill scanner, verify)
// shares one limiter, so together they stay under the endpoint's rate, and
// a 429 pauses all of them for its Retry-After.
package rpclimit

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// Limiter paces one endpoint: a token bucket of Rate requests a second
// (bursts of up to one second's worth), and a pause after a 429.
type Limiter struct {
	bucket *rate.Limiter // nil: no rate, only 429 pauses

	mu    sync.Mutex
	until time.Time // no request before this (a 429's Retry-After)

	throttled atomic.Int64 // 429 answers seen
	waited    atomic.Int64 // nanoseconds requests spent held back
}

var (
	regMu    sync.Mutex
	registry = map[string]*Limiter{}
)

// For returns the limiter shared by every client of endpoint in this
// process, created with perSecond requests a second (0: no rate, 429s
// still pause). The first caller's rate wins.
func For(endpoint string, perSecond float64) *Limiter {
	regMu.Lock()
	defer regMu.Unlock()
	if l, ok := registry[endpoint]; ok {
		return l
	}
	l := New(perSecond)
	registry[endpoint] = l
	return l
}

// New returns a limiter of its own (tests; For shares them).
func New(perSecond float64) *Limiter {
	l := &Limiter{}
	if perSecond > 0 {
		l.bucket = rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond)))
	}
	return l
}

// Throttled is how many 429 answers the endpoint gave.
func (l *Limiter) Throttled() int64 { return l.throttled.Load() }

// Waited is the time requests spent held back, summed over requests.
func (l *Limiter) Waited() time.Duration { return time.Duration(l.waited.Load()) }

// Wait blocks until a request may be sent, or ctx ends.
func (l *Limiter) Wait(ctx context.Context) error {
	start := time.Now()
	defer func() {
		if d := time.Since(start); d > time.Millisecond {
			l.waited.Add(int64(d))
		}
	}()
	for {
		l.mu.Lock()
		pause := time.Until(l.until)
		l.mu.Unlock()
		if pause <= 0 {
			break
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	if l.bucket == nil {
		return nil
	}
	return l.bucket.Wait(ctx)
}

// pause holds every request back for d.
func (l *Limiter) pause(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if until := time.Now().Add(d); until.After(l.until) {
		l.until = until
	}
}

// maxRetries bounds how often one request is sent again after a 429.
const maxRetries = 5

// Transport returns base paced by l. A 429 answer pauses the endpoint for
// its Retry-After (1 s when absent, at most a minute) and the request is
// sent again, up to maxRetries times, when its body can be replayed; the
// last 429 is returned as it is.
func (l *Limiter) Transport(base http.RoundTripper) http.RoundTripper {
	return &transport{l: l, base: base}
}

type transport struct {
	l    *Limiter
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	for try := 0; ; try++ {
		if err := t.l.Wait(req.Context()); err != nil {
			return nil, err
		}
		resp, err := t.base.RoundTrip(req)
		if err != nil || resp.StatusCode != http.StatusTooManyRequests {
			return resp, err
		}
		t.l.throttled.Add(1)
		t.l.pause(RetryAfter(resp.Header.Get("Retry-After"), time.Now()))
		if try == maxRetries || (req.Body != nil && req.GetBody == nil) {
			return resp, nil
		}
		resp.Body.Close()
		if req.GetBody != nil {
			body, err := req.GetBody()
			if err != nil {
				return nil, err
			}
			req = req.Clone(req.Context())
			req.Body = body
		}
	}
}

// RetryAfter reads a Retry-After header (seconds, or an HTTP date) as a
// pause: 1 s when absent or unreadable, at most a minute.
func RetryAfter(h string, now time.Time) time.Duration {
	d := time.Second
	if s, err := strconv.Atoi(h); err == nil && s >= 0 {
		d = time.Duration(s) * time.Second
	} else if at, err := http.ParseTime(h); err == nil {
		d = at.Sub(now)
	}
	return min(max(d, 0), time.Minute)
}
