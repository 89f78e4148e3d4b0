// Package stub is an in-process, deterministic anchoring chain. keeper dev uses
// it until real chains are configured, and tests use its fault injection to
// exercise retries, permanent failures and dropped transactions.
package stub

import (
	"github.com/keeperhq/keeper/internal/config"

	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/retry"
)

// Network implements chains.Networked: the stub chain lives inside one
// keeper process, and its receipts say so.
func (c *Chain) Network(context.Context) (string, error) { return "stub:local", nil }

// Name is the chain name users ask for.
const Name = "stub"

// Chain is the stub ledger. The zero value is not usable; call New.
type Chain struct {
	confirmDelay time.Duration
	now          func() time.Time

	mu        sync.Mutex
	height    uint64
	included  map[string]inclusion // ref -> where it landed
	perBatch  map[int64]map[string]bool
	faults    faults
	held      bool // nothing becomes final while set (HoldFinality)
	submits   int
	broadcast int
}

type inclusion struct {
	block uint64
	at    time.Time
}

type faults struct {
	transient, permanent, drop, statusErr int
}

// New returns a stub chain whose transactions become final confirmDelay after
// they are broadcast.
func New(confirmDelay time.Duration) *Chain {
	return &Chain{
		confirmDelay: confirmDelay,
		now:          time.Now,
		included:     map[string]inclusion{},
		perBatch:     map[int64]map[string]bool{},
	}
}

// Name implements chains.Adapter.
func (c *Chain) Name() string { return Name }

// FailSubmits makes the next n submits fail. A transient failure happens after
// the transaction was recorded and before it was broadcast, like a crash
// between the two; a permanent one is a rejection of the payload.
func (c *Chain) FailSubmits(n int, permanent bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if permanent {
		c.faults.permanent += n
	} else {
		c.faults.transient += n
	}
}

// DropNext makes the chain silently lose the next n broadcasts.
func (c *Chain) DropNext(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults.drop += n
}

// FailStatus makes the next n status lookups fail transiently.
func (c *Chain) FailStatus(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.faults.statusErr += n
}

// HoldFinality makes every transaction stay pending (included, not final)
// while hold is true, as on a chain whose finality stalls; releasing it lets
// each become final confirmDelay after its broadcast, as usual.
func (c *Chain) HoldFinality(hold bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held = hold
}

// Transactions returns how many distinct transactions were ever included for
// a batch. Exactly-once anchoring means 1.
func (c *Chain) Transactions(batchID int64) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.perBatch[batchID])
}

// Counts returns the submit calls and the broadcasts that reached the ledger.
func (c *Chain) Counts() (submits, broadcasts int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.submits, c.broadcast
}

// Submit implements chains.Adapter.
func (c *Chain) Submit(ctx context.Context, a chains.Anchor, j chains.Journal) (string, error) {
	recs, err := j.Transactions(ctx, a.BatchID)
	if err != nil {
		return "", fmt.Errorf("stub: load transactions of batch %d: %w", a.BatchID, err)
	}
	c.mu.Lock()
	c.submits++
	if c.faults.permanent > 0 {
		c.faults.permanent--
		c.mu.Unlock()
		return "", retry.Permanent(fmt.Errorf("stub: batch %d rejected: injected permanent failure", a.BatchID))
	}
	c.mu.Unlock()

	var ref string
	if len(recs) > 0 {
		ref = recs[len(recs)-1].Ref
	} else {
		ref = txRef(a)
		rec := chains.TxRecord{BatchID: a.BatchID, Chain: Name, Ref: ref, Raw: a.Root[:], CreatedAt: c.now()}
		if err := j.SaveTransaction(ctx, rec); err != nil {
			return "", fmt.Errorf("stub: record transaction of batch %d: %w", a.BatchID, err)
		}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.faults.transient > 0 {
		c.faults.transient--
		return "", fmt.Errorf("stub: broadcast of batch %d: injected transient failure", a.BatchID)
	}
	if c.faults.drop > 0 {
		c.faults.drop--
		return ref, nil
	}
	if _, ok := c.included[ref]; !ok {
		c.height++
		c.included[ref] = inclusion{block: c.height, at: c.now()}
		c.broadcast++
		if c.perBatch[a.BatchID] == nil {
			c.perBatch[a.BatchID] = map[string]bool{}
		}
		c.perBatch[a.BatchID][ref] = true
	}
	return ref, nil
}

// Status implements chains.Adapter.
func (c *Chain) Status(ctx context.Context, batchID int64, j chains.Journal) (chains.Status, error) {
	recs, err := j.Transactions(ctx, batchID)
	if err != nil {
		return chains.Status{}, fmt.Errorf("stub: load transactions of batch %d: %w", batchID, err)
	}
	if len(recs) == 0 {
		return chains.Status{}, retry.Permanent(fmt.Errorf("stub: batch %d has no transaction", batchID))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.faults.statusErr > 0 {
		c.faults.statusErr--
		return chains.Status{}, errors.New("stub: status lookup: injected transient failure")
	}
	for i := len(recs) - 1; i >= 0; i-- {
		inc, ok := c.included[recs[i].Ref]
		if !ok {
			continue
		}
		st := chains.Status{State: chains.Pending, Ref: recs[i].Ref, Block: inc.block, BlockTime: inc.at}
		if !c.held && c.now().Sub(inc.at) >= c.confirmDelay {
			st.State = chains.Final
			st.BlockHash = fmt.Sprintf("stub-block-%d", inc.block)
			st.Finality = "confirmations:1"
		}
		return st, nil
	}
	return chains.Status{State: chains.Dropped, Ref: recs[len(recs)-1].Ref, Detail: "not in the stub ledger"}, nil
}

// Ping implements chains.Adapter.
func (c *Chain) Ping(context.Context) error { return nil }

// Lookup returns where a transaction landed, for verifying receipts.
func (c *Chain) Lookup(ref string) (block uint64, at time.Time, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	inc, ok := c.included[ref]
	return inc.block, inc.at, ok
}

func txRef(a chains.Anchor) string {
	var id [8]byte
	binary.BigEndian.PutUint64(id[:], uint64(a.BatchID))
	h := sha256.New()
	h.Write([]byte("keeper-stub-v1"))
	h.Write(id[:])
	h.Write(a.Root[:])
	return "stub:" + hex.EncodeToString(h.Sum(nil))
}

// Make builds the stub the configuration describes (KEEPER_STUB_CONFIRM_MS):
// the node.ChainMaker the keeper binary and the tests register for "stub".
func Make(cfg config.Config) (chains.Adapter, error) { return New(cfg.StubConfirmDelay), nil }
