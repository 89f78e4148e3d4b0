package dispatch_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/dispatch"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// webhookStarter records DeliverWebhook starts; errs are returned first, in
// order.
type webhookStarter struct {
	errs   []error
	ids    []string
	inputs []workflows.WebhookInput
}

func (s *webhookStarter) ExecuteWorkflow(_ context.Context, o client.StartWorkflowOptions, _ any, args ...any) (client.WorkflowRun, error) {
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		if err != nil {
			return nil, err
		}
	}
	s.ids = append(s.ids, o.ID)
	s.inputs = append(s.inputs, args[0].(workflows.WebhookInput))
	return nil, nil
}

func TestTheWebhookDispatcherStartsEachDeliveryOnceAndRetriesWhatTemporalRefused(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "keeper.db"))
	require.NoError(t, err)
	defer st.Close()
	_, err = st.CreateWebhook(ctx, "https://a.example/hook", []string{store.EventEpochFailed})
	require.NoError(t, err)
	for _, id := range []string{"e1", "e2"} {
		ep, _, err := st.CreateEpoch(ctx, store.NewEpoch{ID: id, RequestHash: "h", Pool: "1", Usage: []byte("u")}, 10)
		require.NoError(t, err)
		require.NoError(t, st.FinishEpoch(ctx, ep.ID, ep.Run, store.EpochFailed, "boom"))
	}

	s := &webhookStarter{errs: []error{errors.New("temporal: unavailable")}}
	d := &dispatch.Webhooks{Store: st, Temporal: s, Policy: workflows.WebhookPolicy{RetryFor: 1}}
	require.Error(t, d.StartDue(ctx), "Temporal refused the first start")
	assert.Empty(t, s.ids)

	// Started but not marked before a crash: Temporal says it already runs.
	s.errs = []error{&serviceerror.WorkflowExecutionAlreadyStarted{}}
	require.NoError(t, d.StartDue(ctx))
	require.NoError(t, d.StartDue(ctx), "nothing left to start")
	require.Len(t, s.ids, 1, "the first delivery was already there; the second was started")
	left, err := st.UnstartedDeliveries(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, left)
	assert.Regexp(t, `^webhook-msg_[0-9a-f]{24}-0$`, s.ids[0])
	assert.Equal(t, 0, s.inputs[0].Delivery.Run)
}
