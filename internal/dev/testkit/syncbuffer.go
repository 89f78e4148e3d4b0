// Package testkit holds small aids that tests across keeper share, one of
// each: a log sink safe for concurrent writers, the environment the Temporal
// SDK's envconfig reads, free and refusing local ports, HTTP without sockets
// (HandlerTransport, Pipes) for tests that run in a testing/synctest bubble,
// and a clock a test moves on (Clock). Only tests link it: it lives under
// internal/dev/, which production packages may not import
// (docs/architecture.md).
package testkit

import (
	"bytes"
	"sync"
)

// SyncBuffer collects what goroutines write, such as a run's log lines.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
