package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/keeperhq/keeper/internal/store"
)

// CadenceReport is the cadence phase: a steady arrival at each of a few
// rates, to show that what anchoring costs is bounded by the anchor interval
// and not by the arrival rate (docs/anchoring.md, cadence).
type CadenceReport struct {
	Rows []CadenceRow `json:"rows"`
}

// CadenceRow is one steady rate.
type CadenceRow struct {
	Rate               float64            `json:"rate_per_s"`
	DurationS          float64            `json:"duration_s"`
	Accepted           int                `json:"accepted"`
	Confirmed          int                `json:"confirmed"`
	IntervalMS         map[string]float64 `json:"interval_ms"`
	Txs                map[string]int     `json:"chain_transactions"` // per chain, of settled batches, fee bumps included
	TxsPerChainPerMin  map[string]float64 `json:"transactions_per_chain_per_minute"`
	CeilingPerMin      map[string]float64 `json:"ceiling_per_minute"` // the rule per minute, 60 ÷ interval + 1, full batches aside; absent: no interval
	Batches            map[string]int     `json:"batches"`            // per chain, every batch the rate's evidence went into
	FullBatches        map[string]int     `json:"full_batches"`       // of them, those of KEEPER_BATCH_MAX_ITEMS evidence, which go before the interval is up
	BatchCeiling       map[string]int     `json:"batch_ceiling"`      // the most batches the cadence allows (batchCeiling); absent: no interval
	TxsPerEv           float64            `json:"chain_transactions_per_evidence"`
	ActionsPerEv       float64            `json:"temporal_actions_per_evidence"`
	IntakeToConfirmed  Latency            `json:"intake_to_confirmed"`
	FinalityMS         float64            `json:"finality_ms"`
	ConfirmedP99Target float64            `json:"confirmed_p99_target_ms"` // finality + the longest interval + 1 s
	// FinalToConfirmed is, per confirmed evidence, the time from the block
	// (slot) that made the last of its anchors final to its confirmation,
	// measured where the bench watched every chain's blocks (Watched: the
	// local EVM and Solana chains, finality.go); Path is where the whole
	// of intake → confirmed went, step by step.
	FinalToConfirmed Latency      `json:"final_to_confirmed"`
	Watched          []string     `json:"chains_watched,omitempty"`
	Path             *CadencePath `json:"path,omitempty"`
	Log              *LogReport   `json:"log,omitempty"`
}

// cadence runs the steady rates one after another on the stack.
func cadence(ctx context.Context, o Options, st *stack, ld *loader) (*CadenceReport, error) {
	rep := &CadenceReport{}
	blocks := watchBlocks(ctx, st)
	defer blocks.stop()
	for _, rate := range o.CadenceRates {
		fmt.Fprintf(o.Progress, "bench: cadence, %g evidence/s for %v\n", rate, o.CadenceFor)
		row, err := cadenceAt(ctx, o, st, ld, rate, blocks)
		if err != nil {
			return rep, err
		}
		rep.Rows = append(rep.Rows, *row)
	}
	return rep, nil
}

func cadenceAt(ctx context.Context, o Options, st *stack, ld *loader, rate float64, blocks *blockWatch) (*CadenceRow, error) {
	s := st.store
	before, err := s.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	lp, err := startLogPhase(ctx, st)
	if err != nil {
		return nil, err
	}
	hb0 := st.heartbeats()
	l := ld.openLoop(ctx, rate, o.CadenceFor)
	after, err := s.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	fin := finality(st)
	row := &CadenceRow{
		Rate: rate, DurationS: o.CadenceFor.Seconds(), FinalityMS: msOf(fin),
		IntervalMS: map[string]float64{}, Txs: map[string]int{}, TxsPerChainPerMin: map[string]float64{}, CeilingPerMin: map[string]float64{},
	}
	longest := time.Duration(0)
	for _, c := range st.cfg.Chains {
		iv := st.cfg.AnchorIntervalFor(c)
		longest = max(longest, iv)
		row.IntervalMS[c] = msOf(iv)
		if iv > 0 {
			row.CeilingPerMin[c] = round2(float64(time.Minute)/float64(iv) + 1)
		}
	}
	row.ConfirmedP99Target = msOf(fin + longest + time.Second)
	if _, err := drain(ctx, s, window{before, after}, 2*fin+longest+time.Minute); err != nil {
		return nil, err
	}
	hb1 := st.heartbeats()
	if row.Log, err = lp.finish(ctx, window{before, after}); err != nil {
		return nil, err
	}
	evs, bs, t, err := phaseTimeline(ctx, st, window{before, after}, l)
	if err != nil {
		return nil, err
	}
	intervals := map[string]time.Duration{}
	for _, c := range st.cfg.Chains {
		intervals[c] = st.cfg.AnchorIntervalFor(c)
	}
	row.countBatches(bs, st.cfg.BatchMaxItems, o.CadenceFor, intervals, len(st.apis))
	row.Accepted = len(evs)
	row.Confirmed = len(t.confirmedAt)
	row.IntakeToConfirmed = summarize(t.toConfirmed)
	if err := row.confirmationPath(ctx, st, evs, bs, dueTimes(l), blocks); err != nil {
		return nil, err
	}
	settled := settledBatches(bs)
	total := 0
	for _, b := range bs {
		if settled[b.ID] {
			row.Txs[b.Chain] += b.Txs
			total += b.Txs
		}
	}
	// Per minute of arrivals: a rate's batches form while its evidence
	// arrives (and one more for what came last).
	for c, n := range row.Txs {
		row.TxsPerChainPerMin[c] = round2(float64(n) / o.CadenceFor.Minutes())
	}
	acts, err := batchActions(ctx, st, bs, hb1-hb0)
	if err != nil {
		return nil, err
	}
	if n := t.settledEvidence(settled); n > 0 {
		row.TxsPerEv = math.Round(float64(total)/float64(n)*1e4) / 1e4
		row.ActionsPerEv = math.Round(float64(acts.Total)/float64(n)*1e4) / 1e4
	}
	return row, nil
}

// confirmationPath fills the row's final → confirmed and its path, where
// every chain of the stack was watched.
func (row *CadenceRow) confirmationPath(ctx context.Context, st *stack, evs []store.EvidenceTiming, bs []store.BatchTiming, due map[string]time.Time, blocks *blockWatch) error {
	row.Watched = blocks.watched()
	if len(row.Watched) == 0 || len(row.Watched) < len(st.cfg.Chains) {
		return nil
	}
	cs, err := st.confirmedBatches(ctx, bs)
	if err != nil {
		return err
	}
	var path CadencePath
	row.FinalToConfirmed, path = cadencePath(evs, bs, due, cs, blocks)
	row.Path = &path
	return nil
}

// countBatches fills the row's batches per chain, the full ones among
// them (maxItems evidence, KEEPER_BATCH_MAX_ITEMS) and, for each chain
// with an interval, the ceiling the cadence puts on them over the arrival.
// nodes is how many API nodes dispatched.
func (row *CadenceRow) countBatches(bs []store.BatchTiming, maxItems int, arrival time.Duration, intervals map[string]time.Duration, nodes int) {
	row.Batches, row.FullBatches, row.BatchCeiling = map[string]int{}, map[string]int{}, map[string]int{}
	for _, b := range bs {
		row.Batches[b.Chain]++
		if b.Size >= maxItems {
			row.FullBatches[b.Chain]++
		}
	}
	for c, iv := range intervals {
		if iv > 0 {
			row.BatchCeiling[c] = batchCeiling(arrival, iv, nodes, row.FullBatches[c])
		}
	}
}

// batchCeiling is the most batches the cadence (docs/anchoring.md) lets one
// chain form from evidence arriving over `arrival`: on each of `nodes`
// dispatchers (every API node keeps its own cadence), the first goes at
// once and each next one at least an interval after the one before, so
// every batch but the last starts while evidence still arrives:
// ⌈arrival ÷ interval⌉ + 1. A full batch goes before its interval is up and
// is within the rule, so each one adds one. (Priority 1 evidence may go
// early too; the bench sends none.)
func batchCeiling(arrival, interval time.Duration, nodes, full int) int {
	perNode := int((arrival+interval-1)/interval) + 1
	return max(nodes, 1)*perNode + full
}

// overCeiling compares each chain's batches with its ceiling: the share of
// the ceiling the fullest chain used (≤ 1 is within the cadence), and
// whether every chain with an interval was within it.
func (row *CadenceRow) overCeiling() (worst float64, within bool) {
	within = true
	for c, lim := range row.BatchCeiling {
		n := row.Batches[c]
		within = within && n <= lim
		if lim > 0 {
			worst = max(worst, float64(n)/float64(lim))
		}
	}
	return round2(worst), within
}
