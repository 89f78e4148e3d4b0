package evm

// PollNow runs a status round at once (tests use a long PollInterval and
// drive rounds themselves).
func (a *Adapter) PollNow() { a.poller.Trigger() }
