// Package poller gathers the status lookups of every in-flight transaction on
// one chain endpoint into few batched calls (docs/anchoring.md, status polling): each round takes the
// waiting ids, oldest-checked first then submission order, splits them into
// calls of at most MaxBatch ids, runs at most Connections calls at once, keeps
// only answers for ids that were asked, and treats anything missing as still
// pending. Rounds run every Interval while anyone waits, or at once on Trigger
// or a new block.
//
// The budget (docs/retries.md, status polling): while nobody waits a poller
// makes no call at all; while anyone waits it asks the head every
// HeadInterval, and runs a round on each new head it sees and otherwise one
// Interval after the last round (a round on a new head restarts that
// wait). So a minute costs at most 60 s ÷ HeadInterval head calls plus
// 60 s ÷ HeadInterval rounds when the head moves at every probe, or
// 60 s ÷ Interval rounds when it does not move, and each round is
// ceil(waiting ÷ MaxBatch) calls.
package poller

import (
	"cmp"
	"context"
	"errors"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Lookup makes one batched status call. Ids absent from the answer are
// pending or unknown.
type Lookup[T any] func(ctx context.Context, ids []string) (map[string]T, error)

// Options tune a poller.
type Options struct {
	MaxBatch    int           // ids per call; Solana's getSignatureStatuses takes 256
	Connections int           // concurrent calls to the endpoint; default 4
	Interval    time.Duration // round period while anything waits; default 1 s
	CallTimeout time.Duration // per call; default 10 s
	// Head, when set, reports the chain's latest block (or slot). While anyone
	// waits it is asked every HeadInterval, and a new block starts a round at
	// once instead of Interval after the last one. Nil: no head calls, rounds
	// every Interval.
	Head         func(ctx context.Context) (uint64, error)
	HeadInterval time.Duration // default Interval/4
}

// Poller batches lookups for one endpoint. Use New.
type Poller[T any] struct {
	lookup Lookup[T]
	o      Options

	mu      sync.Mutex
	waiting map[string]*entry // id -> state
	kick    chan struct{}
	done    chan struct{}
	closed  sync.Once

	calls  atomic.Int64
	rounds atomic.Int64
}

type entry struct {
	submitted   time.Time
	lastChecked time.Time
	result      map[*waiter]struct{} // who waits for this id
}

type waiter struct {
	ids  []string
	got  map[string]any
	err  error
	left int
	done chan struct{}
}

// New starts a poller; Close stops it.
func New[T any](lookup Lookup[T], o Options) *Poller[T] {
	o.MaxBatch = cmp.Or(o.MaxBatch, 100)
	o.Connections = cmp.Or(o.Connections, 4)
	o.Interval = cmp.Or(o.Interval, time.Second)
	o.CallTimeout = cmp.Or(o.CallTimeout, 10*time.Second)
	o.HeadInterval = cmp.Or(o.HeadInterval, max(o.Interval/4, time.Millisecond))
	p := &Poller[T]{lookup: lookup, o: o, waiting: map[string]*entry{}, kick: make(chan struct{}, 1), done: make(chan struct{})}
	go p.loop()
	return p
}

// Calls is the number of batched calls made so far.
func (p *Poller[T]) Calls() int64 { return p.calls.Load() }

// Rounds is the number of poll rounds run so far.
func (p *Poller[T]) Rounds() int64 { return p.rounds.Load() }

// Waiting is the number of ids someone waits for now.
func (p *Poller[T]) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.waiting {
		if len(e.result) > 0 {
			n++
		}
	}
	return n
}

// Trigger runs a round now, e.g. when a new block arrived.
func (p *Poller[T]) Trigger() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Close stops the poller; waiting Checks return an error.
func (p *Poller[T]) Close() { p.closed.Do(func() { close(p.done) }) }

// ErrClosed is returned by Check after Close.
var ErrClosed = errors.New("poller: closed")

// Check waits for the next round covering ids and returns what it found for
// them. submitted orders never-checked ids (older first).
func (p *Poller[T]) Check(ctx context.Context, ids []string, submitted time.Time) (map[string]T, error) {
	ids = unique(ids)
	w := &waiter{ids: ids, got: map[string]any{}, left: len(ids), done: make(chan struct{})}
	if len(ids) == 0 {
		return map[string]T{}, nil
	}
	p.mu.Lock()
	for _, id := range ids {
		e := p.waiting[id]
		if e == nil {
			e = &entry{submitted: submitted, result: map[*waiter]struct{}{}}
			p.waiting[id] = e
		}
		e.result[w] = struct{}{}
	}
	p.mu.Unlock()
	defer p.forget(w)

	select {
	case <-w.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-p.done:
		return nil, ErrClosed
	}
	if w.err != nil {
		return nil, w.err
	}
	out := make(map[string]T, len(w.got))
	for id, v := range w.got {
		out[id] = v.(T)
	}
	return out, nil
}

func (p *Poller[T]) forget(w *waiter) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range w.ids {
		if e := p.waiting[id]; e != nil {
			delete(e.result, w)
		}
	}
}

func (p *Poller[T]) loop() {
	// The next round is due Interval after the last one, whatever started
	// it: a round on a new head puts the timed one off, so a chain whose head
	// moves at every probe costs one round per probe, not one more per Interval.
	t := time.NewTimer(p.o.Interval)
	defer t.Stop()
	var heads <-chan time.Time
	if p.o.Head != nil {
		ht := time.NewTicker(p.o.HeadInterval)
		defer ht.Stop()
		heads = ht.C
	}
	var lastHead uint64
	for {
		select {
		case <-p.done:
			return
		case <-t.C:
		case <-p.kick:
		case <-heads:
			if !p.anyWaiting() {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), p.o.CallTimeout)
			h, err := p.o.Head(ctx)
			cancel()
			if err != nil || h <= lastHead {
				continue
			}
			lastHead = h
		}
		p.runRound()
		t.Reset(p.o.Interval)
	}
}

func (p *Poller[T]) anyWaiting() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.waiting {
		if len(e.result) > 0 {
			return true
		}
	}
	return false
}

// runRound polls every id someone waits for.
func (p *Poller[T]) runRound() {
	p.mu.Lock()
	type item struct {
		id string
		e  *entry
	}
	var items []item
	for id, e := range p.waiting {
		if len(e.result) == 0 {
			delete(p.waiting, id)
			continue
		}
		items = append(items, item{id, e})
	}
	p.mu.Unlock()
	if len(items) == 0 {
		return
	}
	p.rounds.Add(1)
	sort.Slice(items, func(i, j int) bool {
		a, b := items[i].e, items[j].e
		if !a.lastChecked.Equal(b.lastChecked) {
			return a.lastChecked.Before(b.lastChecked)
		}
		if !a.submitted.Equal(b.submitted) {
			return a.submitted.Before(b.submitted)
		}
		return items[i].id < items[j].id
	})

	var chunks [][]string
	for i := 0; i < len(items); i += p.o.MaxBatch {
		end := min(i+p.o.MaxBatch, len(items))
		chunk := make([]string, 0, end-i)
		for _, it := range items[i:end] {
			chunk = append(chunk, it.id)
		}
		chunks = append(chunks, chunk)
	}
	sem := make(chan struct{}, p.o.Connections)
	var wg sync.WaitGroup
	for _, chunk := range chunks {
		wg.Add(1)
		sem <- struct{}{}
		go func(ids []string) {
			defer wg.Done()
			defer func() { <-sem }()
			ctx, cancel := context.WithTimeout(context.Background(), p.o.CallTimeout)
			res, err := p.lookup(ctx, ids)
			cancel()
			p.calls.Add(1)
			p.deliver(ids, res, err)
		}(chunk)
	}
	wg.Wait()
}

// deliver hands a call's answers to the waiters of the ids it asked for;
// answers for ids not asked are dropped.
func (p *Poller[T]) deliver(ids []string, res map[string]T, err error) {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range ids {
		e := p.waiting[id]
		if e == nil {
			continue
		}
		e.lastChecked = now
		for w := range e.result {
			if err != nil && w.err == nil {
				w.err = err
			}
			if v, ok := res[id]; ok && err == nil {
				w.got[id] = v
			}
			w.left--
			if w.left == 0 {
				close(w.done)
			}
			delete(e.result, w)
		}
	}
}

func unique(ids []string) []string {
	seen := make(map[string]bool, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
