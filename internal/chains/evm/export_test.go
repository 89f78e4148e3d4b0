package evm

import "time"

// PollNow runs a status round at once (tests use a long PollInterval and
// drive rounds themselves).
func (a *Adapter) PollNow() { a.poller.Trigger() }

// WaitingLookups is the number of transactions whose Status waits for the
// next status round.
func (a *Adapter) WaitingLookups() int { return a.poller.Waiting() }

// SetClock makes the adapter that cfg configures read the time from now.
func SetClock(cfg *Config, now func() time.Time) { cfg.now = now }
