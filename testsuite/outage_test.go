package testsuite

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// An RPC provider down for longer than 20 attempts' worth of backoff (the
// old dead-letter limit) delays evidence and dead-letters none: with
// KEEPER_MAX_ATTEMPTS at its default (0, no limit) submit and confirm
// retry until the provider is back (docs/retries.md, anchor). The schedule
// runs on short numbers (50 ms base, 200 ms cap), so 20 attempts take
// about 4 s and the 20 s outage about 100.
func TestAnOutageLongerThanTwentyAttemptsDeadLettersNothing(t *testing.T) {
	endToEnd(t)
	t.Parallel()
	s := startFaultStack(t, faultOptions{evm: true, evmProxy: true, tune: func(s *faultStack) {
		require.Zero(t, s.cfg.MaxAttempts, "the default: no attempt limit")
		s.cfg.RetryBase, s.cfg.RetryCap, s.cfg.RetryJitter = 50*time.Millisecond, 200*time.Millisecond, 20*time.Millisecond
	}})
	ids := s.post(t, 0, 4)
	s.waitSubmitted(t, ids[:1], evm.Name)

	start := time.Now()
	require.NoError(t, s.evmProxy.Down())
	for time.Since(start) < 20*time.Second {
		ids = append(ids, s.post(t, len(ids), 1)...)
		time.Sleep(2 * time.Second)
	}
	dead, _, err := s.st.ListEvidence(context.Background(), store.ListFilter{Status: store.StatusDeadLetter, Limit: 10})
	require.NoError(t, err)
	require.Empty(t, dead, "nothing dead-lettered during the outage")
	require.NoError(t, s.evmProxy.Up())
	t.Logf("provider back after %v", time.Since(start).Round(time.Second))

	s.checkExactlyOnce(t, ids, time.Minute)
	batches := s.batchesOf(t, ids, evm.Name)
	highest := int32(0)
	for _, b := range batches {
		for _, n := range s.history(t, evm.Name, b).attempts {
			highest = max(highest, n)
		}
		// Retries inside an activity add no events: a batch that waited
		// out the outage has a history as short as one that did not.
		assert.Less(t, s.historyLength(t, evm.Name, b), 60, "batch %d's history stays short", b)
	}
	assert.Greater(t, highest, int32(20), "some step took more than 20 attempts and still succeeded")
	assert.Zero(t, s.metric(t, "keeper_dead_letters_total", evm.Name))
}

// historyLength is how many events a batch's AnchorBatch history holds.
func (s *faultStack) historyLength(t *testing.T, chain string, batch int64) int {
	t.Helper()
	n := 0
	it := s.node.Client.GetWorkflowHistory(context.Background(), workflows.WorkflowID(chain, batch), "", false, enums.HISTORY_EVENT_FILTER_TYPE_ALL_EVENT)
	for it.HasNext() {
		_, err := it.Next()
		require.NoError(t, err)
		n++
	}
	return n
}
