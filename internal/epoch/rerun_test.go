package epoch_test

import (
	"context"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/temporalfake"
	"github.com/keeperhq/keeper/internal/workflows"
)

func TestAQuarantinedEpochRunsAgainOnlyWhenARerunIsAskedFor(t *testing.T) {
	f := newFixture(t, 64)
	require.Equal(t, http.StatusAccepted, f.compute(t, "stuck", threeAccounts).Code)
	const reason = "intents not delivered: emit intents of epoch stuck: ledger HTTP 503"
	require.NoError(t, f.st.FinishEpoch(context.Background(), "stuck", 1, store.EpochQuarantined, reason))
	f.temporal.SetStatus(workflows.EpochWorkflowID("stuck"), enums.WORKFLOW_EXECUTION_STATUS_COMPLETED) // a quarantined epoch's workflow completes

	m := apitest.Decode[api.Manifest](t, f.do(t, "GET", "/rewarder/epochs/stuck", ""))
	assert.Equal(t, "quarantined", m.Status)
	assert.Equal(t, reason, m.Reason, "the reason is on the manifest")

	rec := f.compute(t, "stuck", threeAccounts)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "quarantined", apitest.Decode[api.Manifest](t, rec).Status)
	assert.Len(t, started(f.temporal), 1, "the same request again sends nothing")

	rec = f.do(t, "POST", "/rewarder/epochs/stuck/compute?rerun=true", threeAccounts)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	m = apitest.Decode[api.Manifest](t, rec)
	assert.Equal(t, "queued", m.Status)
	assert.Equal(t, 2, m.Run)
	assert.Empty(t, m.Reason)
	starts := started(f.temporal)
	require.Len(t, starts, 2)
	assert.Equal(t, 2, starts[1].in.Run)
	assert.Equal(t, enums.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING, starts[1].opts.WorkflowIDConflictPolicy)
}

func TestARerunOfACompletedEpochIsAConflictAndABadRerunValueIs400(t *testing.T) {
	f := newFixture(t, 64)
	require.Equal(t, http.StatusAccepted, f.compute(t, "paid", threeAccounts).Code)
	require.NoError(t, f.st.FinishEpoch(context.Background(), "paid", 1, store.EpochCompleted, ""))
	f.temporal.SetStatus(workflows.EpochWorkflowID("paid"), enums.WORKFLOW_EXECUTION_STATUS_COMPLETED)

	rec := f.do(t, "POST", "/rewarder/epochs/paid/compute?rerun=true", threeAccounts)
	require.Equal(t, http.StatusConflict, rec.Code, rec.Body.String())
	e := apitest.Decode[apitest.Problem](t, rec)
	assert.Equal(t, "epoch_completed", e.Code)
	assert.Equal(t, "rerun", e.Field)

	rec = f.do(t, "POST", "/rewarder/epochs/paid/compute?rerun=yes", threeAccounts)
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	e = apitest.Decode[apitest.Problem](t, rec)
	assert.Equal(t, "invalid_rerun", e.Code)
	assert.Equal(t, "rerun", e.Field)
	assert.Len(t, started(f.temporal), 1)
}

func TestQuarantinedEpochsAreShownOnePerEpochOnMetricsUntilReRun(t *testing.T) {
	f := newFixture(t, 64)
	for _, id := range []string{"q1", "q2"} {
		require.Equal(t, http.StatusAccepted, f.compute(t, id, threeAccounts).Code)
		require.NoError(t, f.st.FinishEpoch(context.Background(), id, 1, store.EpochQuarantined, "check failed"))
		f.temporal.SetStatus(workflows.EpochWorkflowID(id), enums.WORKFLOW_EXECUTION_STATUS_COMPLETED) // a quarantined epoch's workflow completes
	}
	metrics := f.do(t, "GET", "/metrics", "").Body.String()
	assert.Contains(t, metrics, "keeper_epochs_quarantined 2")
	assert.Contains(t, metrics, `keeper_epoch_quarantined{epoch="q1"} 1`)
	assert.Contains(t, metrics, `keeper_epoch_quarantined{epoch="q2"} 1`)

	require.Equal(t, http.StatusAccepted, f.do(t, "POST", "/rewarder/epochs/q1/compute?rerun=true", threeAccounts).Code)
	metrics = f.do(t, "GET", "/metrics", "").Body.String()
	assert.Contains(t, metrics, "keeper_epochs_quarantined 1")
	assert.NotContains(t, metrics, `keeper_epoch_quarantined{epoch="q1"}`)
	assert.Contains(t, metrics, `keeper_epoch_quarantined{epoch="q2"} 1`)
}

func TestComputeAnswers503WithRetryAfterWhenTemporalDoesNotAcceptWithinTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 64)
		stalled := &temporalfake.Client{}
		stalled.Hold() // a slow cluster: it never answers
		f.epochs.Temporal = stalled
		f.epochs.Options.AcceptTimeout = 300 * time.Millisecond

		began := time.Now()
		rec := f.compute(t, "slow", threeAccounts)
		took := time.Since(began)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
		assert.Equal(t, "5", rec.Header().Get("Retry-After"))
		e := apitest.Decode[apitest.Problem](t, rec)
		assert.Equal(t, "temporal_unavailable", e.Code)
		assert.Contains(t, e.Message, "within 300ms")
		assert.Equal(t, []bool{true}, stalled.Deadlines(), "the start was given a deadline")
		assert.Equal(t, 300*time.Millisecond, took, "answered at the deadline, not when Temporal gave up")

		// The epoch stays queued: once Temporal accepts, the same request starts it.
		m := apitest.Decode[api.Manifest](t, f.do(t, "GET", "/rewarder/epochs/slow", ""))
		assert.Equal(t, "queued", m.Status)
		f.epochs.Temporal = f.temporal
		require.Equal(t, http.StatusAccepted, f.compute(t, "slow", threeAccounts).Code)
		assert.Len(t, started(f.temporal), 1)
	})
}

func TestComputesAcceptDeadlineIsTwoSecondsUnlessConfigured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 64)
		stalled := &temporalfake.Client{}
		stalled.Hold()
		f.epochs.Temporal = stalled
		began := time.Now()
		rec := f.compute(t, "slow", threeAccounts)
		took := time.Since(began)
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
		assert.Contains(t, apitest.Decode[apitest.Problem](t, rec).Message, "within 2s")
		assert.Equal(t, 2*time.Second, took)
	})
}
