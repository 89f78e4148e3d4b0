package webhook_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/temporalfake"
	"github.com/keeperhq/keeper/internal/webhook"
	"github.com/keeperhq/keeper/internal/workflows"
)

func TestTheWebhookDispatcherStartsEachDeliveryOnceAndRetriesWhatTemporalRefused(t *testing.T) {
	ctx := context.Background()
	st := storetest.SQLite(t)
	_, err := st.CreateWebhook(ctx, "https://a.example/hook", []string{store.EventEpochFailed})
	require.NoError(t, err)
	for _, id := range []string{"e1", "e2"} {
		ep, _, err := st.CreateEpoch(ctx, store.NewEpoch{ID: id, RequestHash: "h", Pool: "1", Usage: []byte("u")}, 10)
		require.NoError(t, err)
		require.NoError(t, st.FinishEpoch(ctx, ep.ID, ep.Run, store.EpochFailed, "boom"))
	}

	s := &temporalfake.Client{}
	s.FailNext(1)
	d := &webhook.Dispatcher{Store: st, Temporal: s, Policy: workflows.WebhookPolicy{RetryFor: 1}}
	require.Error(t, d.StartDue(ctx), "Temporal refused the first start")
	assert.Empty(t, s.Starts())

	// Started but not marked before a crash: Temporal says it already runs.
	s.Fail(&serviceerror.WorkflowExecutionAlreadyStarted{})
	require.NoError(t, d.StartDue(ctx))
	require.NoError(t, d.StartDue(ctx), "nothing left to start")
	require.Len(t, s.Starts(), 1, "the first delivery was already there; the second was started")
	left, err := st.UnstartedDeliveries(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, left)
	assert.Regexp(t, `^webhook-msg_[0-9a-f]{24}-0$`, s.Starts()[0].ID)
	assert.Equal(t, 0, temporalfake.Inputs[workflows.WebhookInput](s)[0].Delivery.Run)
}
