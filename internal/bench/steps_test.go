package bench

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The slowest 1 % is told apart from the rest by keeper's own steps: a
// request that waited for the writer shows it, and the parts add up to
// what the bench measured.
func TestStepsSayWhereTheSlowestRequestsTimeWent(t *testing.T) {
	var reqs []request
	for i := range 99 {
		r := request{status: http.StatusAccepted, latency: time.Millisecond, steps: steps{late: 10}}
		parseServerTiming("read;dur=0.050, admit;dur=0.010, queue;dur=0.100, writer;dur=0.000, commit;dur=0.400, app;dur=0.600", &r.steps)
		reqs = append(reqs, r)
		if i == 0 {
			reqs = append(reqs, request{status: http.StatusTooManyRequests, latency: time.Second}) // refused: no steps, not counted
		}
	}
	slow := request{status: http.StatusAccepted, latency: 9 * time.Millisecond, steps: steps{late: 500}}
	parseServerTiming("read;dur=0.050,admit;dur=0.010, queue;dur=0.100, writer;dur=6.000, commit;dur=0.400, app;dur=6.600, other;dur=1", &slow.steps)
	reqs = append(reqs, slow)

	got := stepsOf(reqs, 9*time.Millisecond)
	require.NotNil(t, got)
	assert.Equal(t, StepsReport{N: 1, TotalMS: 9, LateMS: 0.5, ReadMS: 0.05, AdmitMS: 0.01, QueueMS: 0.1, WriterMS: 6, CommitMS: 0.4, HandlerMS: 0.04, OutsideMS: 1.9}, *got)

	all := stepsOf(reqs, 0)
	require.NotNil(t, all)
	assert.Equal(t, 100, all.N)
	assert.InDelta(t, all.TotalMS, all.LateMS+all.ReadMS+all.AdmitMS+all.QueueMS+all.WriterMS+all.CommitMS+all.HandlerMS+all.OutsideMS, 0.005)

	assert.Nil(t, stepsOf([]request{{status: http.StatusAccepted, latency: time.Millisecond}}, 0), "an API without Server-Timing")
}
