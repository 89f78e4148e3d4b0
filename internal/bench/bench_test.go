package bench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPercentilesAreNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := summarize(ds)
	assert.Equal(t, 100, l.N)
	assert.Equal(t, 50.0, l.P50)
	assert.Equal(t, 95.0, l.P95)
	assert.Equal(t, 99.0, l.P99)
	assert.Equal(t, 100.0, l.P999)
	assert.Equal(t, 100.0, l.Max)
	assert.Equal(t, Latency{}, summarize(nil))
}

func TestTheEvidenceIDIsFoundInIndentedAndCompactAnswers(t *testing.T) {
	id := "ev_0123456789abcdef01234567"
	assert.Equal(t, id, evidenceID([]byte("{\n  \"id\": \""+id+"\",\n  \"status\": \"pending\"\n}")))
	assert.Equal(t, id, evidenceID([]byte(`{"id":"`+id+`","status":"pending"}`)))
	assert.Empty(t, evidenceID([]byte(`{"code":"overloaded"}`)))
}

func TestSteadyRateCountsFromTheFirstConfirmationPlusWarmUpForAsLongAsTheLoad(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var tl evTimeline
	// Nothing for 10 s (finality), then 100 confirmations a second for 60 s.
	for s := 10; s < 70; s++ {
		for i := range 100 {
			tl.confirmedAt = append(tl.confirmedAt, t0.Add(time.Duration(s)*time.Second+time.Duration(i)*10*time.Millisecond))
		}
	}
	rate, from, to := steadyRate(tl, t0, 60*time.Second, t0.Add(80*time.Second))
	assert.Equal(t, 100.0, rate)
	assert.Equal(t, 20.0, from, "first confirmation at 10 s plus a 10 s warm-up")
	assert.Equal(t, 70.0, to, "as long after the first confirmation as the load lasted")
}

func TestMemoryGrowthComparesMediansOfTheLoadAndIgnoresTheSawtoothAndWhatFollows(t *testing.T) {
	var ss []MemorySample
	for i := range 100 {
		rss := 300.0
		if i%10 == 9 { // a GC cycle's peak
			rss = 400
		}
		ss = append(ss, MemorySample{T: float64(i), Phase: PhaseBatched, RSSMiB: rss})
	}
	// The analysis after the load is not the batched phase.
	ss = append(ss, MemorySample{T: 100, RSSMiB: 900})
	r := &Report{Memory: &MemoryReport{Samples: ss}}
	g, ok := r.MemoryGrowth()
	assert.True(t, ok)
	assert.Equal(t, 0.0, g, "a flat sawtooth is flat")

	for i := 80; i < 100; i++ {
		ss[i].RSSMiB = 345
	}
	g, _ = r.MemoryGrowth()
	assert.Equal(t, 15.0, g, "the last fifth's median over the second fifth's")
}

func TestANegativeSettingIsRefusedAndZeroTakesTheDefault(t *testing.T) {
	ctx := context.Background()
	_, err := Run(ctx, Options{Drain: -time.Second})
	require.ErrorContains(t, err, "--drain must not be negative")
	_, err = Run(ctx, Options{Rate: -1})
	require.ErrorContains(t, err, "--rate must not be negative")
	_, err = RunBackfill(ctx, BackfillOptions{EVMRounds: -1})
	require.ErrorContains(t, err, "--evm-rounds must not be negative")
	_, err = RunEpoch(ctx, EpochOptions{PollEvery: -time.Millisecond})
	require.ErrorContains(t, err, "PollEvery must not be negative")

	var o Options
	require.NoError(t, o.negative())
	o.defaults()
	assert.Equal(t, 60*time.Second, o.Duration)
	assert.Equal(t, 1000.0, o.Rate)
	assert.Equal(t, 2*time.Minute, o.Drain)
	assert.Equal(t, DefaultPostgresURL, o.PostgresURL)
}
