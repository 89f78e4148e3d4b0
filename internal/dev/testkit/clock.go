package testkit

import (
	"sync"
	"time"
)

// Clock is the wall clock plus however far a test moved it on: code given
// its Now sees the time pass at once when the test calls Advance, instead of
// the test sleeping, and otherwise behaves as on the wall clock.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now is the wall clock's time plus every Advance so far.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset += d
}
