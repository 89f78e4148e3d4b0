package bench

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/store"
)

// benchConfig is the bench's usual configuration: both chains at keeper
// dev's anchor interval.
func benchConfig() config.Config {
	cfg := config.Default()
	cfg.Chains = []string{"etherlink", "solana"}
	cfg.AnchorInterval = config.DevAnchorInterval
	return cfg
}

func TestAPhaseTooShortForItsSteadyWindowIsNamedWithWhatItGotAndTheLeastThatGivesOne(t *testing.T) {
	o := Options{Config: benchConfig(), Phases: []string{PhaseCadence, PhaseIntake, PhaseBatched, PhaseBulk}, Duration: 20 * time.Second, CadenceFor: 30 * time.Second}
	o.defaults()
	short := o.shortPhases()
	require.Len(t, short, 3, "cadence, batched and bulk; intake has no warm-up to leave out")
	assert.Equal(t, ShortPhase{Phase: PhaseCadence, Flag: "--cadence-for", GivenS: 30, LeastS: 60, Why: short[0].Why}, short[0])
	assert.Equal(t, ShortPhase{Phase: PhaseBatched, Flag: "--duration", GivenS: 20, LeastS: 30, Why: short[1].Why}, short[1])
	assert.Equal(t, PhaseBulk, short[2].Phase)
	assert.Equal(t, "batched phase: --duration 20s is too short for a steady window; use at least 30s "+
		"(confirmed/s leaves out 10s of warm-up after the first confirmation and counts over the next 20s)", short[1].String())

	r := newReport(o)
	var out bytes.Buffer
	r.WriteTable(&out)
	assert.Contains(t, out.String(), "WARNING: bulk phase: --duration 20s is too short for a steady window; use at least 30s")
	assert.Contains(t, out.String(), "WARNING: cadence phase: --cadence-for 30s is too short for a steady window; use at least 1m0s")
}

func TestADefaultRunIsSteady(t *testing.T) {
	o := Options{Config: benchConfig()}
	o.defaults()
	assert.Empty(t, o.shortPhases())
}

func TestTheCadencePhaseSpansTwoOfTheLongestAnchorIntervals(t *testing.T) {
	cfg := benchConfig()
	cfg.SolanaInterval = config.OptionalDuration{D: time.Minute, Set: true} // production's
	o := Options{Config: cfg, Phases: []string{PhaseCadence}, CadenceFor: 90 * time.Second}
	o.defaults()
	short := o.shortPhases()
	require.Len(t, short, 1)
	assert.Equal(t, 120.0, short[0].LeastS)
	assert.Contains(t, short[0].Why, "two of the longest anchor interval, 1m0s")
}

func TestAShortLoadGetsAShortenedWarmUpAndALongOneTheFullWarmUp(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var tl evTimeline
	// Nothing for 10 s (finality), then 100 confirmations a second for 40 s.
	for s := 10; s < 50; s++ {
		for i := range 100 {
			tl.confirmedAt = append(tl.confirmedAt, t0.Add(time.Duration(s)*time.Second+time.Duration(i)*10*time.Millisecond))
		}
	}
	_, from, to := steadyRate(tl, t0, 40*time.Second, t0.Add(60*time.Second))
	assert.Equal(t, 20.0, from, "40 s is long enough: the full 10 s warm-up after the first confirmation")
	assert.Equal(t, 50.0, to)
	assert.True(t, steadyLoad(40*time.Second))

	_, from, to = steadyRate(tl, t0, 12*time.Second, t0.Add(60*time.Second))
	assert.Equal(t, 12.0, from, "12 s has no steady window: a sixth of it as warm-up, so that it still gives a figure")
	assert.Equal(t, 22.0, to)
	assert.False(t, steadyLoad(12*time.Second))
}

// batchesOf lists n batches of size evidence on chain.
func batchesOf(chain string, n, size int) []store.BatchTiming {
	out := make([]store.BatchTiming, n)
	for i := range out {
		out[i] = store.BatchTiming{ID: int64(i + 1), Chain: chain, Size: size}
	}
	return out
}

func TestFullBatchesAreWithinTheCadence(t *testing.T) {
	// The production cadence's run (docs/benchmarks.md, the evidence log):
	// 100,000 evidence at 1,000/s for 100 s with a 1-minute interval fill 6
	// batches of 16,384 per chain; the rest goes in a batch at once, one a
	// minute later and one with what came last.
	bs := append(batchesOf("etherlink", 6, 16384), batchesOf("etherlink", 3, 500)...)
	bs = append(bs, batchesOf("solana", 6, 16384)...)
	bs = append(bs, batchesOf("solana", 3, 500)...)
	row := &CadenceRow{Rate: 1000, Confirmed: 100000}
	row.countBatches(bs, 16384, 100*time.Second, map[string]time.Duration{"etherlink": time.Minute, "solana": time.Minute}, 1)
	assert.Equal(t, map[string]int{"etherlink": 9, "solana": 9}, row.Batches)
	assert.Equal(t, map[string]int{"etherlink": 6, "solana": 6}, row.FullBatches)
	assert.Equal(t, map[string]int{"etherlink": 9, "solana": 9}, row.BatchCeiling, "⌈100 s ÷ 1 min⌉ + 1 = 3, plus the 6 full ones")

	ts := &targets{deployment: DeploySQLite}
	cadenceTargets(ts, row)
	require.NotEmpty(t, ts.list)
	g := ts.list[0]
	assert.Equal(t, "cadence at 1000/s: batches per chain", g.Name)
	assert.Equal(t, VerdictMet, g.Verdict, g.Measured)
	assert.Equal(t, "etherlink 9 (6 full) of 9, solana 9 (6 full) of 9", g.Measured)

	// One batch more than the interval allows is a miss, full ones or not.
	row.countBatches(append(bs, store.BatchTiming{ID: 99, Chain: "solana", Size: 10}), 16384, 100*time.Second,
		map[string]time.Duration{"etherlink": time.Minute, "solana": time.Minute}, 1)
	ts = &targets{deployment: DeploySQLite}
	cadenceTargets(ts, row)
	assert.Equal(t, VerdictMissed, ts.list[0].Verdict)
	assert.False(t, ts.list[0].Met)
	assert.InDelta(t, 10.0/9, ts.list[0].Value, 0.01, "the fullest chain's share of its ceiling")
}

func TestTheCadenceCeilingCountsTheFirstBatchTheLastAndEachNode(t *testing.T) {
	assert.Equal(t, 61, batchCeiling(30*time.Second, 500*time.Millisecond, 1, 0), "at once, then one per 500 ms while evidence arrives")
	assert.Equal(t, 121, batchCeiling(time.Minute, 500*time.Millisecond, 1, 0), "a minute: 60 ÷ interval + 1")
	assert.Equal(t, 3, batchCeiling(70*time.Second, time.Minute, 1, 0), "a minute and a bit: at once, at 1 min, and what came last")
	assert.Equal(t, 12, batchCeiling(100*time.Second, time.Minute, 2, 6), "each API node keeps its own cadence")

	row := &CadenceRow{}
	row.countBatches(batchesOf("stub", 5, 1), 16384, time.Second, map[string]time.Duration{"stub": 0}, 1)
	assert.Empty(t, row.BatchCeiling, "no interval, no ceiling")
	ts := &targets{}
	cadenceTargets(ts, row)
	for _, g := range ts.list {
		assert.NotContains(t, g.Name, "batches per chain")
	}
}

func TestTargetsListTheLogsFigures(t *testing.T) {
	log := func(n int, bytesPer, p99 float64) *LogReport {
		return &LogReport{Evidence: n, InCheckpoint: n, IntakeToCheckpoint: Latency{N: n, P99: p99}, Bytes: int64(float64(n) * bytesPer), BytesPerEvidence: bytesPer}
	}
	r := &Report{Deployments: []*DeploymentReport{{
		Name:   DeploySQLite,
		Intake: &IntakeReport{TargetRate: 1000, AchievedRate: 1000, Latency: Latency{P99: 8}, Log: log(60000, 101, 452)},
		Batched: &AnchorReport{Mode: PhaseBatched, Steady: true, ConfirmedPerSec: 26000, Drained: true, SettledEvidence: 1,
			Log: log(400000, 101, 900)},
	}}}
	storeGrowth(r.Deployments[0].Batched, 0, 400000*382, 400000, 2)
	assert.Equal(t, 191.0, r.Deployments[0].Batched.BytesPerEvidenceChain)
	assert.Equal(t, 51.0, r.Deployments[0].Batched.LogBytesPerEvidenceChain, "the log's 101 bytes an evidence over its two chains")
	r.Evaluate()

	byName := map[string]Target{}
	for _, g := range r.Targets {
		byName[g.Name] = g
	}
	g := byName["intake at 1000/s: intake → in a signed checkpoint p99"]
	assert.Equal(t, VerdictMet, g.Verdict)
	assert.Equal(t, 452.0, g.Value)
	g = byName["batched: store bytes per evidence and chain, the log included"]
	assert.Equal(t, "≤ 200", g.Goal)
	assert.Equal(t, "191, of which the log 51", g.Measured)
	assert.Equal(t, VerdictMet, g.Verdict)
	for _, name := range []string{"intake: log bytes per evidence", "batched: log bytes per evidence"} {
		g = byName[name]
		assert.Equal(t, VerdictStated, g.Verdict, name)
		assert.Equal(t, 101.0, g.Value, name)
		assert.False(t, g.Met, "%s: a figure without a goal is never met", name)
	}
	assert.Equal(t, VerdictMet, byName["batched confirmed/s"].Verdict)

	var out bytes.Buffer
	r.WriteTable(&out)
	assert.Contains(t, out.String(), "batched: log bytes per evidence")
	assert.Contains(t, out.String(), "101 (400000 evidence)  stated")
	b, err := json.Marshal(r)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"name":"batched: log bytes per evidence","goal":"stated","measured":"101 (400000 evidence)","value":101,"met":false,"verdict":"stated"`)
}

func TestEachAnchoringPhaseHoldsItsLargestProcessToAGibibyte(t *testing.T) {
	r := &Report{Deployments: []*DeploymentReport{
		{Name: DeploySQLite, Batched: &AnchorReport{Mode: PhaseBatched, PeakRSSMiB: 1300}, Bulk: &AnchorReport{Mode: PhaseBulk, PeakRSSMiB: 700}},
		{Name: DeployMulti, Batched: &AnchorReport{Mode: PhaseBatched, PeakRSSMiB: 2100, Processes: []ProcessCost{
			{Name: "api-1", PeakRSSMiB: 400}, {Name: "worker-2", PeakRSSMiB: 900}, {Name: "bench", PeakRSSMiB: 1500}}}},
	}}
	r.Evaluate()
	got := map[string]Target{}
	for _, g := range r.Targets {
		got[g.Deployment+" "+g.Name] = g
	}
	assert.Equal(t, VerdictMissed, got["sqlite batched: peak RSS"].Verdict, "1,300 MiB is over the gibibyte")
	assert.Equal(t, "1300 MiB (the one process)", got["sqlite batched: peak RSS"].Measured)
	assert.Equal(t, VerdictMet, got["sqlite bulk: peak RSS"].Verdict)
	g := got["multi batched: peak RSS"]
	assert.Equal(t, VerdictMet, g.Verdict, "the largest keeper process, not the sum and not the load generator")
	assert.Equal(t, "900 MiB (worker-2)", g.Measured)
}

func TestAPhaseTooShortIsNeitherMetNorMissed(t *testing.T) {
	r := &Report{Deployments: []*DeploymentReport{{
		Name:        DeploySQLite,
		Batched:     &AnchorReport{Mode: PhaseBatched, Steady: false, ConfirmedPerSec: 20000, Drained: true, CPUPer1000: 0.1},
		PerEvidence: &AnchorReport{Mode: PhasePerEvidence, Steady: false, ConfirmedPerSec: 100},
		Ratio:       200,
	}}}
	r.Evaluate()
	n := 0
	for _, g := range r.Targets {
		switch g.Name {
		case "batched confirmed/s", "CPU per 1,000 evidence", "batched / per-evidence":
			n++
			assert.Equal(t, VerdictNotSteady, g.Verdict, g.Name)
			assert.False(t, g.Met, "%s: a figure that is not steady state meets nothing", g.Name)
			assert.Contains(t, g.Measured, "too short for a steady window")
		}
	}
	assert.Equal(t, 3, n)
	var out bytes.Buffer
	r.WriteTable(&out)
	assert.Contains(t, out.String(), "not steady: the phase was too short")
}

// Two APIs and two workers on one PostgreSQL are held to the one process on
// PostgreSQL of the same run: ≥ 0.9× its rate at ≤ 1.15× its CPU per
// evidence, PostgreSQL's included.
func TestTheMultiProcessDeploymentIsHeldToTheOneProcessOfTheSameRun(t *testing.T) {
	batched := func(rate, keeper, pg float64) *AnchorReport {
		return &AnchorReport{Mode: PhaseBatched, Steady: true, ConfirmedPerSec: rate, Drained: true, SettledEvidence: 1,
			CPUPer1000: keeper, Postgres: &ServerCost{CPUPer1000: pg}}
	}
	for _, c := range []struct {
		multi *AnchorReport
		want  string
	}{
		{batched(9500, 0.10, 0.05), VerdictMet},
		{batched(8500, 0.10, 0.05), VerdictMissed},  // 0.85× the rate
		{batched(10000, 0.12, 0.06), VerdictMissed}, // 1.2× the CPU
	} {
		r := &Report{Deployments: []*DeploymentReport{
			{Name: DeployPostgres, Batched: batched(10000, 0.10, 0.05)},
			{Name: DeployMulti, Batched: c.multi},
		}}
		r.Evaluate()
		i := slices.IndexFunc(r.Targets, func(g Target) bool { return g.Deployment == DeployMulti && g.Name == "processes add up" })
		require.GreaterOrEqual(t, i, 0)
		assert.Equal(t, c.want, r.Targets[i].Verdict, r.Targets[i].Measured)
	}
}
