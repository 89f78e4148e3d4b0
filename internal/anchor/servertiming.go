package anchor

import (
	"strconv"
	"time"

	"github.com/keeperhq/keeper/internal/store"
)

// serverTiming is where the time of one POST /v1/evidence went, answered
// as its Server-Timing header (W3C Server Timing: a metric per step, its
// duration in milliseconds), so a client that saw a slow answer can tell
// keeper's share from the network's and its own:
//
//	read    reading and checking the request
//	admit   back-pressure's count of pending evidence
//	queue   waiting for a group commit to take it
//	writer  waiting for the store's writer (SQLite) or a batch being formed (PostgreSQL)
//	commit  its group's inserts and commit
//	app     the whole handler, up to writing the answer
type serverTiming struct {
	start       time.Time
	read, admit time.Duration
	store       store.IntakeTiming
}

func (t *serverTiming) String() string {
	b := make([]byte, 0, 96)
	for i, m := range [...]struct {
		name string
		d    time.Duration
	}{{"read", t.read}, {"admit", t.admit}, {"queue", t.store.Queue}, {"writer", t.store.Writer}, {"commit", t.store.Commit}, {"app", time.Since(t.start)}} {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, m.name...)
		b = append(b, ";dur="...)
		b = strconv.AppendFloat(b, float64(m.d.Microseconds())/1000, 'f', 3, 64)
	}
	return string(b)
}
