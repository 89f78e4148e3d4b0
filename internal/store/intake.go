package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// Intake owns evidence (the evidence table): intake's group commit
// (InsertEvidence here, InsertEvidenceBatch in bulk.go), which writes an
// evidence's row once and nothing else, and the reads of evidence, whose
// status is derived from its anchors, with RetryEvidence and RedriveEvidence
// putting dead-lettered anchors back (intakerecords.go). Which evidence of a
// chain still waits for a batch is the lanes' cursors (lanes.go), shared
// with Anchors.
type Intake struct{ *db }

// committer is intake's group commit. SQLite has one writer; with a
// transaction per request, concurrent requests queue on it one by one and
// each pays for its own commit. Instead, InsertEvidence and
// InsertEvidenceBatch hand their evidence to a goroutine (one on SQLite,
// postgresCommitters on PostgreSQL) that takes every
// request waiting at that moment (up to maxGroup evidence, but never part of
// a request) and commits them in one transaction, answering each request
// once that transaction is committed. A lone request is committed at once;
// under load the requests arriving during one commit share the next. On
// PostgreSQL, where writers do not queue, it still saves a commit (a WAL
// flush) per request.
type committer struct {
	reqs chan *insertReq
	quit chan struct{}
	wg   sync.WaitGroup
	once sync.Once
}

// maxGroup bounds the evidence of one intake transaction, so one commit
// never holds the writer for long. A batch request larger than that is
// still committed whole, in a transaction of its own.
const maxGroup = 256

// insertReq is one request's evidence: one for InsertEvidence, many for
// InsertEvidenceBatch.
type insertReq struct {
	ctx  context.Context
	evs  []Evidence // ID, digest, chains, priority, key, metadata, times filled in
	res  []Inserted // one per evidence, filled in before done is closed
	at   groupTimes // its group's moments, filled in before done is closed
	done chan struct{}
}

// Inserted is what the store did with one evidence handed to it.
type Inserted struct {
	Evidence Evidence // as stored; or, for a key seen before, the evidence stored under it
	Created  bool     // false: the idempotency key was seen before and nothing was stored
	Err      error    // nothing of this evidence was stored
}

var errClosed = errors.New("store: closed")

// postgresCommitters is how many group commits run at once on PostgreSQL,
// where writers do not queue on one lock: while one waits for its WAL
// flush, the next group is already being written. SQLite has one writer,
// so one committer.
const postgresCommitters = 4

func (s Intake) startCommitter() {
	s.intake = &committer{reqs: make(chan *insertReq), quit: make(chan struct{})}
	n := 1
	if s.d.postgres {
		n = postgresCommitters
	}
	for range n {
		s.intake.wg.Add(1)
		go s.runCommitter()
	}
}

func (s Intake) stopCommitter() {
	if s.intake == nil {
		return
	}
	s.intake.once.Do(func() { close(s.intake.quit) })
	s.intake.wg.Wait()
}

// enqueue hands one insert to the committer and waits for its answer.
func (s Intake) enqueue(ctx context.Context, ev Evidence) (Evidence, bool, error) {
	res, err := s.enqueueAll(ctx, []Evidence{ev})
	if err != nil {
		return Evidence{}, false, err
	}
	return res[0].Evidence, res[0].Created, res[0].Err
}

// enqueueAll hands a request's evidence to the committer and waits for the
// answer, one per evidence. An error means none was stored. Once the
// committer has taken them, the answer is awaited even if ctx ends, so a
// caller never reports an error for evidence that was stored.
func (s Intake) enqueueAll(ctx context.Context, evs []Evidence) ([]Inserted, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // not left to the select below, which may hand it over all the same
	}
	if err := s.ensureLanes(ctx, evs); err != nil {
		return nil, err
	}
	r := &insertReq{ctx: ctx, evs: evs, res: make([]Inserted, len(evs)), done: make(chan struct{})}
	handed := time.Now()
	select {
	case s.intake.reqs <- r:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-s.intake.quit:
		return nil, errClosed
	}
	<-r.done
	r.at.record(ctx, handed)
	return r.res, nil
}

func (s Intake) runCommitter() {
	defer s.intake.wg.Done()
	group := make([]*insertReq, 0, maxGroup)
	for {
		var n int
		select {
		case r := <-s.intake.reqs:
			group, n = append(group[:0], r), len(r.evs)
		case <-s.intake.quit:
			return
		}
	more:
		for n < maxGroup {
			select {
			case r := <-s.intake.reqs:
				group, n = append(group, r), n+len(r.evs)
			default:
				break more
			}
		}
		s.commitGroup(group, n)
	}
}

// commitGroup stores a group of n evidence in one transaction. When that
// transaction fails, each evidence is tried again in a transaction of its
// own, so one bad insert fails alone and the others are stored.
func (s Intake) commitGroup(group []*insertReq, n int) {
	at := groupTimes{taken: time.Now()}
	live := group[:0:0]
	for _, r := range group {
		if err := r.ctx.Err(); err != nil {
			for i := range r.res {
				r.res[i] = Inserted{Err: err} // the caller gave up before anything was written
			}
			n -= len(r.evs)
			close(r.done)
			continue
		}
		live = append(live, r)
	}
	if len(live) == 0 {
		return
	}
	created := false
	err := s.tx(context.Background(), func(tx *txn) error {
		if err := s.holdIntake(context.Background(), tx); err != nil {
			return err
		}
		at.began = time.Now() // PostgreSQL: after the lock a batch being formed holds
		ins, err := s.prepareInserts(tx)
		if err != nil {
			return err
		}
		defer ins.close()
		for _, r := range live {
			for i, ev := range r.evs {
				ev, c, err := s.insertOne(tx, ins, ev)
				if err != nil {
					return err
				}
				r.res[i] = Inserted{Evidence: ev, Created: c}
				created = created || c
			}
		}
		return nil
	})
	at.committed = time.Now()
	if err != nil {
		created = false
		for _, r := range live {
			for i, ev := range r.evs {
				if n == 1 {
					r.res[i] = Inserted{Err: fmt.Errorf("store: insert evidence: %w", err)}
					continue
				}
				r.res[i] = s.insertAlone(r.ctx, ev)
				created = created || r.res[i].Created
			}
		}
	}
	for _, r := range live {
		r.at = at
		close(r.done)
	}
	if created {
		s.notify()
	}
}

// insertAlone stores one evidence in a transaction of its own.
func (s Intake) insertAlone(ctx context.Context, ev Evidence) Inserted {
	var res Inserted
	err := s.tx(ctx, func(tx *txn) error {
		if err := s.holdIntake(ctx, tx); err != nil {
			return err
		}
		ins, err := s.prepareInserts(tx)
		if err != nil {
			return err
		}
		defer ins.close()
		res.Evidence, res.Created, err = s.insertOne(tx, ins, ev)
		return err
	})
	if err != nil {
		return Inserted{Err: fmt.Errorf("store: insert evidence: %w", err)}
	}
	return res
}

// inserts are intake's statements, prepared once on the writer (txn.Stmt):
// the inserts, and the probe for an idempotency key (most keys are new).
type inserts struct{ evidence, keyed *sql.Stmt }

func (s Intake) prepareInserts(tx *txn) (*inserts, error) {
	ctx := context.Background()
	insert, probe := intakeQueries(s.d)
	ev, err := tx.Stmt(ctx, insert)
	if err != nil {
		return nil, err
	}
	keyed, err := tx.Stmt(ctx, probe)
	if err != nil {
		ev.Close()
		return nil, err
	}
	return &inserts{evidence: ev, keyed: keyed}, nil
}

// intakeQueries are intake's insert and its probe for an idempotency key.
func intakeQueries(d *dialect) (insert, probe string) {
	insert = `INSERT INTO evidence (id, digest, salt, chains, priority, idempotency_key, metadata, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`
	if d.postgres {
		// Another node may store the same key between insertOne's look-up
		// and this insert; then nothing is inserted and no seq returned.
		insert += ` ON CONFLICT (idempotency_key) DO NOTHING`
	}
	return d.returning(insert, "seq"), `SELECT 1 FROM evidence WHERE idempotency_key = ?`
}

func (i *inserts) close() {
	i.evidence.Close()
	i.keyed.Close()
}

// keyed returns the evidence stored under key inside tx, or ErrNotFound.
func (s Intake) keyed(ctx context.Context, tx *txn, ins *inserts, key string) (Evidence, error) {
	var one int
	switch err := ins.keyed.QueryRowContext(ctx, key).Scan(&one); {
	case errors.Is(err, sql.ErrNoRows):
		return Evidence{}, ErrNotFound
	case err != nil:
		return Evidence{}, err
	}
	return s.evidenceByKey(ctx, tx, key)
}

// insertOne writes one evidence inside tx. An
// idempotency key already stored (by an earlier transaction or earlier in
// this one) returns that evidence with created=false and writes nothing.
func (s Intake) insertOne(tx *txn, ins *inserts, ev Evidence) (Evidence, bool, error) {
	ctx := context.Background()
	if err := checkChains(ev.Chains); err != nil {
		return Evidence{}, false, err
	}
	if ev.IdempotencyKey != "" {
		existing, err := s.keyed(ctx, tx, ins, ev.IdempotencyKey)
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
	// Its anchors are pending on their lanes (lanes.go): no outbox rows.
	ev.Anchors = make([]AnchorState, 0, len(ev.Chains))
	for _, c := range ev.Chains {
		ev.Anchors = append(ev.Anchors, AnchorState{Chain: c, Status: StatusPending})
	}
	return ev, true, nil
}

// checkChains refuses a chain list an evidence cannot be anchored on: empty,
// a chain twice (its lane would take it once), or a name with a comma (the
// list is stored comma-separated).
func checkChains(chains []string) error {
	if len(chains) == 0 {
		return errors.New("evidence lists no chain")
	}
	for i, c := range chains {
		if c == "" || strings.Contains(c, ",") {
			return fmt.Errorf("chain %q is not a chain name", c)
		}
		if slices.Contains(chains[:i], c) {
			return fmt.Errorf("chain %q is listed twice", c)
		}
	}
	return nil
}
