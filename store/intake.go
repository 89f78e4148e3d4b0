package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// committer is intake's group commit. SQLite has one writer; with a
// transaction per request, concurrent requests queue on it one by one and
// each pays for its own commit. Instead, InsertEvidence hands its evidence to
// one goroutine that takes every insert waiting at that moment (up to
// maxGroup) and commits them in one transaction, answering each request once
// that transaction is committed. A lone request is committed at once; under
// load the requests arriving during one commit share the next. On
// PostgreSQL, where writers do not queue, it still saves a commit (a WAL
// flush) per request.
type committer struct {
	reqs chan *insertReq
	quit chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// maxGroup bounds one intake transaction, so one commit never holds the
// writer for long.
const maxGroup = 256

type insertReq struct {
	ctx context.Context
	ev  Evidence // ID, digest, chains, priority, key, metadata, times filled in
	res chan insertRes
}

type insertRes struct {
	ev      Evidence
	created bool
	err     error
}

var errClosed = errors.New("store: closed")

func (s *Store) startCommitter() {
	s.intake = &committer{reqs: make(chan *insertReq), quit: make(chan struct{})}
	s.intake.wg.Add(1)
	go s.runCommitter()
}

func (s *Store) stopCommitter() {
	if s.intake == nil {
		return
	}
	s.intake.once.Do(func() { close(s.intake.quit) })
	s.intake.wg.Wait()
}

// enqueue hands one insert to the committer and waits for its answer. Once
// the committer has taken it, the answer is awaited even if ctx ends, so a
// caller never reports an error for evidence that was stored.
func (s *Store) enqueue(ctx context.Context, ev Evidence) (Evidence, bool, error) {
	r := &insertReq{ctx: ctx, ev: ev, res: make(chan insertRes, 1)}
	select {
	case s.intake.reqs <- r:
	case <-ctx.Done():
		return Evidence{}, false, ctx.Err()
	case <-s.intake.quit:
		return Evidence{}, false, errClosed
	}
	res := <-r.res
	return res.ev, res.created, res.err
}

func (s *Store) runCommitter() {
	defer s.intake.wg.Done()
	group := make([]*insertReq, 0, maxGroup)
	for {
		select {
		case r := <-s.intake.reqs:
			group = append(group[:0], r)
		case <-s.intake.quit:
			return
		}
	more:
		for len(group) < maxGroup {
			select {
			case r := <-s.intake.reqs:
				group = append(group, r)
			default:
				break more
			}
		}
		s.commitGroup(group)
	}
}

// commitGroup stores a group of evidence in one transaction. When that
// transaction fails, each evidence is tried again in a transaction of its
// own, so one bad insert fails alone and the others are stored.
func (s *Store) commitGroup(group []*insertReq) {
	live := group[:0:0]
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			r.res <- insertRes{err: err} // the caller gave up before anything was written
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	results := make([]insertRes, len(live))
	created := false
	err := s.tx(context.Background(), func(tx *txn) error {
		ins, err := s.prepareInserts(tx)
		if err != nil {
			return err
		}
		defer ins.close()
		for i, r := range live {
			ev, c, err := s.insertOne(tx, ins, r.ev)
			if err != nil {
				return err
			}
			results[i] = insertRes{ev: ev, created: c}
			created = created || c
		}
		return nil
	})
	if err != nil && len(live) > 1 {
		for _, r := range live {
			var res insertRes
			res.err = s.tx(r.ctx, func(tx *txn) error {
				ins, err := s.prepareInserts(tx)
				if err != nil {
					return err
				}
				defer ins.close()
				res.ev, res.created, err = s.insertOne(tx, ins, r.ev)
				return err
			})
			if res.err != nil {
				res = insertRes{err: fmt.Errorf("store: insert evidence: %w", res.err)}
			}
			created = created || res.created
			r.res <- res
		}
	} else {
		for i, r := range live {
			if err != nil {
				results[i] = insertRes{err: fmt.Errorf("store: insert evidence: %w", err)}
			}
			r.res <- results[i]
		}
	}
	if created {
		s.notify()
	}
}

type inserts struct{ evidence, outbox *sql.Stmt }

func (s *Store) prepareInserts(tx *txn) (*inserts, error) {
	ctx := context.Background()
	q := `INSERT INTO evidence (id, digest, salt, chains, priority, idempotency_key, metadata, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	if s.d.postgres {
		// Another node may store the same key between insertOne's look-up
		// and this insert; then nothing is inserted and no seq returned.
		q += ` ON CONFLICT (idempotency_key) DO NOTHING`
	}
	ev, err := tx.PrepareContext(ctx, s.d.returning(q, "seq"))
	if err != nil {
		return nil, err
	}
	ob, err := tx.PrepareContext(ctx, `INSERT INTO outbox (evidence_seq, chain, priority) VALUES (?, ?, ?)`)
	if err != nil {
		ev.Close()
		return nil, err
	}
	return &inserts{evidence: ev, outbox: ob}, nil
}

func (i *inserts) close() {
	i.evidence.Close()
	i.outbox.Close()
}

// insertOne writes one evidence and its outbox rows inside tx. An
// idempotency key already stored (by an earlier transaction or earlier in
// this one) returns that evidence with created=false and writes nothing.
func (s *Store) insertOne(tx *txn, ins *inserts, ev Evidence) (Evidence, bool, error) {
	ctx := context.Background()
	if ev.IdempotencyKey != "" {
		existing, err := s.evidenceByKey(ctx, tx, ev.IdempotencyKey)
		if err == nil {
			return existing, false, nil
		} else if !errors.Is(err, ErrNotFound) {
			return Evidence{}, false, err
		}
	}
	var key, meta any
	if ev.IdempotencyKey != "" {
		key = ev.IdempotencyKey
	}
	if len(ev.Metadata) > 0 {
		meta = string(ev.Metadata)
	}
	at := ms(ev.CreatedAt)
	var err error
	ev.seq, err = s.d.insertedID(ctx, ins.evidence, ev.ID, ev.Digest[:], ev.Salt, strings.Join(ev.Chains, ","), ev.Priority, key, meta, at, at)
	if errors.Is(err, sql.ErrNoRows) && ev.IdempotencyKey != "" {
		existing, err := s.evidenceByKey(ctx, tx, ev.IdempotencyKey)
		return existing, false, err
	}
	if err != nil {
		return Evidence{}, false, err
	}
	ev.Anchors = make([]AnchorState, 0, len(ev.Chains))
	for _, c := range ev.Chains {
		if _, err := ins.outbox.ExecContext(ctx, ev.seq, c, ev.Priority); err != nil {
			return Evidence{}, false, err
		}
		ev.Anchors = append(ev.Anchors, AnchorState{Chain: c, Status: StatusPending})
	}
	return ev, true, nil
}
