package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/keeperhq/keeper/internal/store"
)

// AnchorReport is one anchoring phase: as much evidence as intake accepts
// for the duration, followed until it is confirmed.
type AnchorReport struct {
	Mode                  string        `json:"mode"`
	BatchMaxItems         int           `json:"batch_max_items"`
	Clients               int           `json:"clients"`
	Intake                IntakeReport  `json:"intake"`
	Confirmed             int           `json:"confirmed"` // of the accepted evidence, by the end of the phase
	Drained               bool          `json:"drained"`   // every accepted evidence settled before the phase ended
	ConfirmedPerSec       float64       `json:"confirmed_per_s"`
	SteadyFromS           float64       `json:"steady_from_s"` // the window confirmed_per_s is measured over, from the phase start
	SteadyToS             float64       `json:"steady_to_s"`
	Steady                bool          `json:"steady"`              // the load was long enough for a steady window (steadyLoad); else confirmed_per_s is not steady state
	IntakeToSubmitted     Latency       `json:"intake_to_submitted"` // until the anchor transaction was journaled for broadcast on every chain
	IntakeToConfirmed     Latency       `json:"intake_to_confirmed"`
	Batches               int           `json:"batches"`
	MeanBatchSize         float64       `json:"mean_batch_size"`
	SettledEvidence       int           `json:"settled_evidence"` // evidence whose every batch has ended: the cost figures cover these
	Actions               Actions       `json:"temporal_actions"`
	ActionsPerEv          float64       `json:"temporal_actions_per_evidence"`
	ChainTxs              int           `json:"chain_transactions"`
	ChainTxsPerEv         float64       `json:"chain_transactions_per_evidence"`
	CPUSeconds            float64       `json:"cpu_seconds"` // keeper's processes, the bench's load generator included
	CPUPer1000            float64       `json:"cpu_seconds_per_1000_evidence"`
	PeakRSSMiB            float64       `json:"peak_rss_mib"`        // the process's, or the sum of keeper's processes' peaks
	Postgres              *ServerCost   `json:"postgres,omitempty"`  // the PostgreSQL server's CPU, when the stack uses one on this machine
	Processes             []ProcessCost `json:"processes,omitempty"` // multi-process: each process, and the bench's own
	StoreBytes            int64         `json:"store_bytes_growth"`  // keeper's store (store.Size) after the phase's evidence settled, minus before it
	StoredEvidence        int           `json:"stored_evidence"`     // evidence the phase stored
	BytesPerEvidence      float64       `json:"store_bytes_per_evidence"`
	BytesPerEvidenceChain float64       `json:"store_bytes_per_evidence_and_chain"` // the log's tables included: they are in the store
	// LogBytesPerEvidenceChain is the log's share of BytesPerEvidenceChain:
	// its tables' growth over the same evidence and chains.
	LogBytesPerEvidenceChain float64    `json:"log_bytes_per_evidence_and_chain"`
	Log                      *LogReport `json:"log,omitempty"`
	Series                   []Point    `json:"series"`
	Load1                    float64    `json:"load_average_1m"`
}

// Point is one second of an anchoring phase: evidence confirmed in it and
// the p99 intake-to-confirmed latency of those.
type Point struct {
	T         float64 `json:"t_s"`
	Confirmed int     `json:"confirmed"`
	P99MS     float64 `json:"p99_ms"`
}

// anchoring runs one anchoring phase; analysing is called once its evidence
// has settled, before the report is computed (reading histories costs memory
// that is not the phase's).
// loadDone is called when the load stops (the drain and the analysis
// follow), so memory is judged over the load alone.
func anchoring(ctx context.Context, o Options, mode string, st *stack, ld *loader, loadDone func()) (*AnchorReport, error) {
	s := st.store
	before, err := s.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	size0, err := s.Size(ctx)
	if err != nil {
		return nil, err
	}
	lp, err := startLogPhase(ctx, st)
	if err != nil {
		return nil, err
	}
	st.resetPeaks()
	u0 := st.cpuUse()
	hb0 := st.heartbeats()
	t0 := time.Now()

	clients := clientsOf(o, mode)
	l, err := ld.closedLoop(ctx, clients, o.AnchorRate, o.Duration)
	loadDone()
	if err != nil {
		return nil, err
	}
	after, err := s.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	// Batched, every evidence settles within finality plus a little; per
	// evidence it may never catch up, so it is followed for as long as the
	// first evidence took, enough to see its steady rate.
	limit := o.Drain
	if mode == PhasePerEvidence {
		limit = finality(st) + 15*time.Second
	}
	drained, err := drain(ctx, s, window{before, after}, limit)
	if err != nil {
		return nil, err
	}
	u1 := st.cpuUse()
	hb1 := st.heartbeats()
	end := time.Now()
	if err := st.exitedChild(); err != nil {
		return nil, err
	}
	size1, err := s.Size(ctx)
	if err != nil {
		return nil, err
	}
	logRep, err := lp.finish(ctx, window{before, after})
	if err != nil {
		return nil, err
	}

	rep := &AnchorReport{
		Mode: mode, BatchMaxItems: st.cfg.BatchMaxItems, Clients: clients, Intake: intakeSummary(l, o.AnchorRate),
		Drained: drained, Log: logRep,
	}
	evs, bs, t, err := phaseTimeline(ctx, st, window{before, after}, l)
	if err != nil {
		return nil, err
	}
	rep.Confirmed = len(t.confirmedAt)
	st.costs(rep, u0, u1)
	storeGrowth(rep, size0, size1, len(evs), len(st.cfg.Chains))
	rep.IntakeToConfirmed = summarize(t.toConfirmed)
	rep.IntakeToSubmitted = summarize(t.toSubmitted)
	rep.Series = series(t, t0, end)
	rep.ConfirmedPerSec, rep.SteadyFromS, rep.SteadyToS = steadyRate(t, t0, o.Duration, end)
	rep.Steady = steadyLoad(o.Duration)
	rep.Batches = len(bs)
	if len(bs) > 0 {
		total := 0
		for _, b := range bs {
			total += b.Size
		}
		rep.MeanBatchSize = round2(float64(total) / float64(len(bs)))
	}
	settled := settledBatches(bs)
	rep.SettledEvidence = t.settledEvidence(settled)
	acts, err := batchActions(ctx, st, bs, hb1-hb0)
	if err != nil {
		return nil, err
	}
	rep.Actions = acts
	for _, b := range bs {
		if settled[b.ID] {
			rep.ChainTxs += b.Txs
		}
	}
	if rep.SettledEvidence > 0 {
		rep.ActionsPerEv = math.Round(float64(acts.Total)/float64(rep.SettledEvidence)*1e4) / 1e4
		rep.ChainTxsPerEv = math.Round(float64(rep.ChainTxs)/float64(rep.SettledEvidence)*1e4) / 1e4
	}
	rep.Load1 = loadAverage()
	return rep, nil
}

// phaseTimeline reads the timings of the evidence taken in during w, and of
// their batches, and lines them up against when load l sent each.
func phaseTimeline(ctx context.Context, st *stack, w window, l load) ([]store.EvidenceTiming, []store.BatchTiming, evTimeline, error) {
	s := st.store
	evs, err := s.EvidenceTimings(ctx, w.after, w.upto)
	if err != nil {
		return nil, nil, evTimeline{}, err
	}
	bs, err := s.BatchTimings(ctx, w.after, w.upto)
	if err != nil {
		return nil, nil, evTimeline{}, err
	}
	return evs, bs, timeline(evs, bs, dueTimes(l), len(st.cfg.Chains)), nil
}

// batchActions counts the Temporal actions of the batches' histories plus
// the heartbeats that reached the server meanwhile.
func batchActions(ctx context.Context, st *stack, bs []store.BatchTiming, heartbeats int64) (Actions, error) {
	acts, err := countActions(ctx, st.client, workflowIDs(bs))
	if err != nil {
		return Actions{}, fmt.Errorf("bench: count Temporal actions: %w", err)
	}
	acts.Heartbeats = heartbeats
	acts.total()
	return acts, nil
}

// finality is the slowest configured chain's time to finality.
func finality(st *stack) time.Duration {
	var f float64
	for _, c := range chainInfo(st.cfg, st.local) {
		f = max(f, c.FinalityMS)
	}
	return time.Duration(f * float64(time.Millisecond))
}

func dueTimes(l load) map[string]time.Time {
	out := make(map[string]time.Time, len(l.reqs))
	for _, r := range l.accepted() {
		out[r.evidence()] = r.dueAt()
	}
	return out
}

// evTimeline is what happened to each evidence the load generator got a 202 for.
type evTimeline struct {
	confirmedAt []time.Time     // confirmation times, in intake order
	toConfirmed []time.Duration // due → confirmed, same order
	toSubmitted []time.Duration // due → anchor journaled on its last chain
	perChainSub map[string][]time.Duration
	batchesOf   [][]int64 // every evidence's batches
	chains      int
}

func timeline(evs []store.EvidenceTiming, bs []store.BatchTiming, due map[string]time.Time, chains int) evTimeline {
	byID := map[int64]store.BatchTiming{}
	for _, b := range bs {
		byID[b.ID] = b
	}
	t := evTimeline{perChainSub: map[string][]time.Duration{}, chains: chains}
	for _, e := range evs {
		d, ok := due[e.ID]
		if !ok {
			continue // not from this load (or its answer was lost)
		}
		t.batchesOf = append(t.batchesOf, e.Batches)
		if e.Status == store.StatusConfirmed {
			t.confirmedAt = append(t.confirmedAt, e.UpdatedAt)
			t.toConfirmed = append(t.toConfirmed, nonNegative(e.UpdatedAt.Sub(d)))
		}
		var last time.Time
		complete := len(e.Batches) == chains
		for _, id := range e.Batches {
			b := byID[id]
			if b.FirstTx.IsZero() {
				complete = false
				continue
			}
			t.perChainSub[b.Chain] = append(t.perChainSub[b.Chain], nonNegative(b.FirstTx.Sub(d)))
			if b.FirstTx.After(last) {
				last = b.FirstTx
			}
		}
		if complete {
			t.toSubmitted = append(t.toSubmitted, nonNegative(last.Sub(d)))
		}
	}
	return t
}

func nonNegative(d time.Duration) time.Duration { return max(d, 0) }

func settledBatches(bs []store.BatchTiming) map[int64]bool {
	out := map[int64]bool{}
	for _, b := range bs {
		if b.State == store.BatchConfirmed || b.State == store.BatchDeadLetter {
			out[b.ID] = true
		}
	}
	return out
}

// settledEvidence counts the evidence whose every chain's batch has ended.
func (t evTimeline) settledEvidence(settled map[int64]bool) int {
	n := 0
	for _, bs := range t.batchesOf {
		ok := len(bs) == t.chains
		for _, id := range bs {
			ok = ok && settled[id]
		}
		if ok {
			n++
		}
	}
	return n
}

// series buckets confirmations by the second they happened in.
func series(t evTimeline, t0, end time.Time) []Point {
	n := int(end.Sub(t0).Seconds()) + 1
	lat := make([][]time.Duration, n)
	for i, c := range t.confirmedAt {
		s := int(c.Sub(t0).Seconds())
		if s >= 0 && s < n {
			lat[s] = append(lat[s], t.toConfirmed[i])
		}
	}
	out := make([]Point, n)
	for s := range out {
		out[s] = Point{T: float64(s), Confirmed: len(lat[s])}
		if len(lat[s]) > 0 {
			out[s].P99MS = summarize(lat[s]).P99
		}
	}
	return out
}

// steadyRate is confirmations per second once the pipeline is full: from
// the first confirmation plus SteadyWarmUp until as long after the load
// ended as the first confirmation took, within what was observed. A load
// shorter than SteadyWarmUp + SteadyWindow has no steady window: its
// warm-up shrinks to a sixth of the load so that it still gives a figure,
// which the report marks as not steady (steadyLoad).
func steadyRate(t evTimeline, t0 time.Time, load time.Duration, end time.Time) (rate, from, to float64) {
	if len(t.confirmedAt) == 0 {
		return 0, 0, 0
	}
	first := t.confirmedAt[0]
	for _, c := range t.confirmedAt {
		if c.Before(first) {
			first = c
		}
	}
	lag := first.Sub(t0)
	warm := SteadyWarmUp
	if !steadyLoad(load) {
		warm = load / 6
	}
	start, stop := t0.Add(lag+warm), t0.Add(lag+load)
	if stop.After(end) {
		stop = end
	}
	if !stop.After(start) {
		start, stop = first, end
	}
	n := 0
	for _, c := range t.confirmedAt {
		if !c.Before(start) && c.Before(stop) {
			n++
		}
	}
	return round2(float64(n) / stop.Sub(start).Seconds()), round2(start.Sub(t0).Seconds()), round2(stop.Sub(t0).Seconds())
}

// LowLoadReport is the latency of a lone evidence: the dispatcher starts its
// batch at once, so what remains is keeper's, Temporal's and the chains' own.
type LowLoadReport struct {
	EveryMS           float64            `json:"every_ms"`
	DurationS         float64            `json:"duration_s"`
	Intake            IntakeReport       `json:"intake"`
	IntakeToSubmitted Latency            `json:"intake_to_submitted"` // on every chain
	PerChainSubmitted map[string]Latency `json:"intake_to_submitted_per_chain"`
	IntakeToConfirmed Latency            `json:"intake_to_confirmed"`
	FinalityMS        float64            `json:"finality_ms"` // the slowest chain's block time × depth
	OverFinality      Latency            `json:"confirmed_minus_finality"`
	Load1             float64            `json:"load_average_1m"`
}

func lowLoad(ctx context.Context, o Options, st *stack, ld *loader) (*LowLoadReport, error) {
	s := st.store
	before, err := s.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	l := ld.openLoop(ctx, float64(time.Second)/float64(o.LowLoadEvery), o.LowLoadFor)
	after, err := s.LastSeq(ctx)
	if err != nil {
		return nil, err
	}
	fin := finality(st)
	if _, err := drain(ctx, s, window{before, after}, 2*fin+time.Minute); err != nil {
		return nil, err
	}
	_, _, t, err := phaseTimeline(ctx, st, window{before, after}, l)
	if err != nil {
		return nil, err
	}
	rep := &LowLoadReport{
		EveryMS: msOf(o.LowLoadEvery), DurationS: o.LowLoadFor.Seconds(), Intake: intakeSummary(l, float64(time.Second)/float64(o.LowLoadEvery)),
		IntakeToSubmitted: summarize(t.toSubmitted), IntakeToConfirmed: summarize(t.toConfirmed),
		PerChainSubmitted: map[string]Latency{}, FinalityMS: msOf(fin),
	}
	for c, ds := range t.perChainSub {
		rep.PerChainSubmitted[c] = summarize(ds)
	}
	over := make([]time.Duration, len(t.toConfirmed))
	for i, d := range t.toConfirmed {
		over[i] = d - fin
	}
	rep.OverFinality = summarize(over)
	rep.Load1 = loadAverage()
	return rep, nil
}

// clientsOf is how many clients an anchoring phase posts from.
func clientsOf(o Options, mode string) int {
	if mode == PhaseBulk {
		return o.BulkClients
	}
	return o.Concurrency
}
