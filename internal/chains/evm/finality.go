package evm

import (
	"fmt"
	"sync"
	"time"
)

// A stalled `finalized` block. On EtherLink `finalized` is the last block
// posted to and confirmed on Tezos, and an EVM node advances it only while it
// tracks a rollup node: one that does not keeps serving new `latest` blocks
// with a `finalized` that never moves, and keeper would wait on its anchors
// forever. The adapter watches both heads (from Ping and from every status
// round) and, when `finalized` has not moved for FinalityStall while `latest`
// has, fails Ping (so /readyz says why), sets keeper_chain_finalized_stalled
// and logs it once; it logs again once `finalized` moves.

// finalityWatch remembers when the node's `finalized` block last moved.
type finalityWatch struct {
	mu      sync.Mutex
	seen    bool
	fin     uint64 // last finalized block seen (0 with hasFin false: none reported)
	hasFin  bool
	movedAt time.Time // when fin last changed (or was first seen)
	base    uint64    // latest block when fin last changed
	latest  uint64    // latest block last seen
	stalled bool      // the state last logged
}

// observeFinality records one reading of the node's latest and finalized
// blocks (finalized nil: the node reported none).
func (a *Adapter) observeFinality(latest uint64, finalized *uint64) {
	if a.cfg.Confirmations > 0 {
		return
	}
	w := &a.fin
	w.mu.Lock()
	now := a.now()
	moved := !w.seen || (finalized != nil) != w.hasFin || (finalized != nil && *finalized != w.fin)
	if moved {
		w.seen, w.hasFin, w.movedAt, w.base = true, finalized != nil, now, latest
		w.fin = 0
		if finalized != nil {
			w.fin = *finalized
		}
	}
	w.latest = max(w.latest, latest)
	w.mu.Unlock()
	a.FinalityStalled() // logs a change of state
}

// FinalityStalled says why anchors cannot become final when the node's
// `finalized` block has not moved for FinalityStall while its `latest` block
// has (nil otherwise, and always with Confirmations set). It logs a warning
// when the stall starts and a line when it ends.
func (a *Adapter) FinalityStalled() error {
	if a.cfg.Confirmations > 0 {
		return nil
	}
	w := &a.fin
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.seen {
		return nil
	}
	age := a.now().Sub(w.movedAt)
	stalled := age >= a.cfg.FinalityStall && w.latest > w.base
	var err error
	if stalled {
		what := fmt.Sprintf("finalized block %d has not moved", w.fin)
		if !w.hasFin {
			what = "the node has reported no finalized block"
		}
		err = fmt.Errorf("%s for %s while latest went from %d to %d (threshold %s): anchors cannot become final; on EtherLink the node must track a rollup node",
			what, age.Round(time.Second), w.base, w.latest, a.cfg.FinalityStall)
	}
	if stalled != w.stalled {
		w.stalled = stalled
		if stalled {
			a.log.Warn("finalized block stalled", "finalized", w.fin, "latest", w.latest, "since", age.Round(time.Second).String(), "threshold", a.cfg.FinalityStall.String())
		} else {
			a.log.Info("finalized block moves again", "finalized", w.fin, "latest", w.latest)
		}
	}
	return err
}
