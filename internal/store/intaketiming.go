package store

import (
	"context"
	"time"
)

// IntakeTiming is where one intake request's time went inside the store,
// filled in when InsertEvidence or InsertEvidenceBatch returns, for a
// context made by WithIntakeTiming. The API answers it as Server-Timing, so
// a client (keeper bench among them) can tell the store's share of a slow
// answer from the rest.
type IntakeTiming struct {
	Queue  time.Duration // handed to the group commit → a committer took it
	Writer time.Duration // taken → its group's write transaction began: waiting for the writer (SQLite) or for a batch being formed (PostgreSQL)
	Commit time.Duration // its group's inserts and commit
}

type intakeTimingKey struct{}

// WithIntakeTiming returns ctx carrying t, for the store to fill in.
func WithIntakeTiming(ctx context.Context, t *IntakeTiming) context.Context {
	return context.WithValue(ctx, intakeTimingKey{}, t)
}

// groupTimes are the moments of one group commit.
type groupTimes struct{ taken, began, committed time.Time }

// record fills in ctx's IntakeTiming, if it carries one, for a request
// handed over at handed and committed in a group with times g.
func (g groupTimes) record(ctx context.Context, handed time.Time) {
	t, _ := ctx.Value(intakeTimingKey{}).(*IntakeTiming)
	if t == nil || g.taken.IsZero() {
		return
	}
	t.Queue = g.taken.Sub(handed)
	if !g.began.IsZero() {
		t.Writer = g.began.Sub(g.taken)
		t.Commit = g.committed.Sub(g.began)
	}
}
