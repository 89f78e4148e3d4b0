package store

import (
	"context"
	"time"
)

// InsertEvidenceBatch stores many evidence in
// one transaction (intake's group commit: see committer), and answers one
// Inserted per evidence, in order. Each is stored whole or not at all: when
// the transaction fails, every evidence is tried again in a transaction of
// its own and only those that fail alone carry an Err.
//
// An idempotency key seen before, in an earlier request or earlier in nes,
// answers the evidence stored under it with Created false and stores
// nothing; the caller compares that evidence with what it asked for.
//
// The error is for the call as a whole (ctx ended before the store took
// the evidence, the store is closing): then nothing was stored.
func (s Intake) InsertEvidenceBatch(ctx context.Context, nes []NewEvidence) ([]Inserted, error) {
	if len(nes) == 0 {
		return nil, nil
	}
	now := fromMS(ms(time.Now()))
	evs := make([]Evidence, len(nes))
	for i, ne := range nes {
		evs[i] = Evidence{
			ID: newEvidenceID(now), Digest: ne.Digest, Salt: newSalt(), Chains: ne.Chains, Priority: ne.Priority,
			IdempotencyKey: ne.IdempotencyKey, Metadata: ne.Metadata, Status: StatusPending,
			CreatedAt: now, UpdatedAt: now,
		}
	}
	return s.enqueueAll(ctx, evs)
}
