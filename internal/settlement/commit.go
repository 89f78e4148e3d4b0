package settlement

import (
	"context"
	"sync"
	"time"

	"github.com/keeperhq/keeper/internal/store"
)

// maxCommitBatch bounds how many intents one store transaction records.
const maxCommitBatch = 256

// committer gathers intents that arrive together into one store transaction,
// like a database's group commit: SQLite has one writer, and a commit per
// intent would cap the ledger at a few thousand intents per second.
type committer struct {
	mu      sync.Mutex
	queue   []*pendingIntent
	running bool
}

type pendingIntent struct {
	li   store.LedgerIntent
	res  store.IntentResult
	err  error
	done chan struct{}
}

// record stores one intent through the next group commit.
func (s *Server) record(li store.LedgerIntent) (store.IntentResult, error) {
	p := &pendingIntent{li: li, done: make(chan struct{})}
	c := &s.commits
	c.mu.Lock()
	c.queue = append(c.queue, p)
	start := !c.running
	c.running = true
	c.mu.Unlock()
	if start {
		go s.commitLoop()
	}
	<-p.done
	return p.res, p.err
}

// commitLoop commits what is queued, batch after batch, until nothing is.
func (s *Server) commitLoop() {
	c := &s.commits
	for {
		c.mu.Lock()
		batch := c.queue
		if len(batch) > maxCommitBatch {
			batch = batch[:maxCommitBatch]
		}
		c.queue = c.queue[len(batch):]
		if len(batch) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()

		lis := make([]store.LedgerIntent, len(batch))
		for i, p := range batch {
			lis[i] = p.li
		}
		// Not a request's context: the batch serves many requests.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		results, err := s.Store.RecordLedgerIntents(ctx, lis)
		cancel()
		for i, p := range batch {
			if err != nil {
				p.err = err
			} else {
				p.res = results[i]
			}
			close(p.done)
		}
	}
}
