package workflows_test

import (
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/stub"
	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/workflows"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
)

type AnchorBatchSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env    *testsuite.TestWorkflowEnvironment
	store  *store.Store
	chain  *stub.Chain
	metric *anchor.Metrics
	starts map[string][]time.Time // activity type -> start times (workflow clock), local activities included
	local  map[string]int         // activity type -> local activity attempts started
	// revision is the AnchorBatchInput.Revision every test runs: each
	// runs on the revision batches start with today and on revisions 1
	// and 0, which batches started by an older keeper still run.
	revision int
}

func TestAnchorBatch(t *testing.T) {
	t.Run("outlast outages", func(t *testing.T) { suite.Run(t, &AnchorBatchSuite{revision: workflows.AnchorRevision}) })
	t.Run("revision 1", func(t *testing.T) { suite.Run(t, &AnchorBatchSuite{revision: workflows.RevisionLocalSteps}) })
	t.Run("revision 0", func(t *testing.T) { suite.Run(t, &AnchorBatchSuite{revision: 0}) })
}

func (s *AnchorBatchSuite) SetupTest() {
	st := storetest.SQLite(s.T())
	s.store, s.chain, s.metric = st, stub.New(0), anchor.NewMetrics()
	s.starts, s.local = map[string][]time.Time{}, map[string]int{}
	s.env = s.NewTestWorkflowEnvironment()
	anchor.RegisterActivities(s.env, &anchor.Activities{
		Store: st, Chains: map[string]chains.Adapter{stub.Name: s.chain},
		Backoff: retry.Anchor, ConfirmPoll: 10 * time.Millisecond, Metrics: s.metric,
	})
	s.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		s.starts[info.ActivityType.Name] = append(s.starts[info.ActivityType.Name], s.env.Now())
	})
	s.env.SetOnLocalActivityStartedListener(func(info *activity.Info, _ context.Context, _ []any) {
		s.starts[info.ActivityType.Name] = append(s.starts[info.ActivityType.Name], s.env.Now())
		s.local[info.ActivityType.Name]++
	})
}

// counted is a stub-chain counter of the anchoring metrics as /metrics
// would show it, for one activity ("" for counters without that label).
func (s *AnchorBatchSuite) counted(name, activity string) float64 {
	reg := prometheus.NewRegistry()
	reg.MustRegister(s.metric.Collectors()...)
	mfs, err := reg.Gather()
	s.Require().NoError(err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["chain"] == stub.Name && labels["activity"] == activity {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

func (s *AnchorBatchSuite) formBatch(n int) store.Batch {
	ctx := context.Background()
	for i := 0; i < n; i++ {
		_, _, err := s.store.InsertEvidence(ctx, store.NewEvidence{
			Digest: sha256.Sum256([]byte(fmt.Sprint(s.T().Name(), i))), Chains: []string{stub.Name}, Priority: 5,
		})
		s.Require().NoError(err)
	}
	b, ok, err := s.store.FormBatch(ctx, stub.Name, 1024)
	s.Require().NoError(err)
	s.Require().True(ok)
	return b
}

func (s *AnchorBatchSuite) input(b store.Batch, maxAttempts int32) workflows.AnchorBatchInput {
	return workflows.AnchorBatchInput{BatchID: b.ID, Chain: b.Chain, Size: b.Size, Priority: b.Priority, Revision: s.revision, Policy: workflows.AnchorPolicy{
		MaxAttempts: maxAttempts, RetryBase: 5 * time.Second, RetryCap: 300 * time.Second, SubmitTimeout: time.Minute, ConfirmTimeout: time.Hour, Heartbeat: time.Minute, MaxResubmits: 3,
	}}
}

func (s *AnchorBatchSuite) evidenceOf(b store.Batch) []store.Evidence {
	evs, _, err := s.store.ListEvidence(context.Background(), store.ListFilter{Limit: 1000})
	s.Require().NoError(err)
	var out []store.Evidence
	for _, ev := range evs {
		if ev.Anchors[0].BatchID == b.ID {
			out = append(out, ev)
		}
	}
	s.Require().Len(out, b.Size)
	return out
}

func (s *AnchorBatchSuite) TestConfirmsBatchAndRecordsVerifiableReceipts() {
	b := s.formBatch(7)
	s.env.ExecuteWorkflow(workflows.AnchorBatch, s.input(b, 20))
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	var res workflows.AnchorBatchResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal("confirmed", res.Status)
	s.Equal(1, s.chain.Transactions(b.ID))

	for _, ev := range s.evidenceOf(b) {
		s.Equal(store.StatusConfirmed, ev.Status)
		a := ev.Anchors[0]
		s.Equal(res.TxRef, a.TxRef)
		s.Equal(7, a.TreeSize)
		leaves, err := s.store.BatchLeafHashes(context.Background(), a.BatchID)
		s.Require().NoError(err)
		hs := make([]merkle.Hash, len(leaves))
		for i, h := range leaves {
			hs[i] = h
		}
		tree, err := merkle.FromLeafHashes(hs)
		s.Require().NoError(err)
		path, err := tree.Path(a.LeafIndex)
		s.Require().NoError(err)
		s.Len(ev.Salt, store.SaltSize, "every evidence has its salt")
		s.NoError(merkle.Verify(receipt.Leaf(ev.Salt, ev.Digest), a.LeafIndex, a.TreeSize, path, a.Root), "evidence %s", ev.ID)
		s.Equal("stub:local", a.Network)
		s.NotEmpty(a.BlockHash)
		s.NotEmpty(a.Finality)
	}
}

func (s *AnchorBatchSuite) TestTransientSubmitFailuresBackOffOnTheAnchorSchedule() {
	b := s.formBatch(3)
	s.chain.FailSubmits(4, false)
	s.env.ExecuteWorkflow(workflows.AnchorBatch, s.input(b, 20))
	s.Require().NoError(s.env.GetWorkflowError())

	starts := s.starts["SubmitAnchor"]
	s.Require().Len(starts, 5)
	for i, want := range []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second} {
		got := starts[i+1].Sub(starts[i])
		s.Greater(got, want, "delay after failure %d carries jitter on top of the base", i+1)
		s.Less(got, want+time.Second+100*time.Millisecond, "delay after failure %d (jitter is below 1 s)", i+1)
	}
	// The failed attempts recorded the transaction before failing: every retry
	// rebroadcast it, so the chain holds one anchor for the batch.
	s.Equal(1, s.chain.Transactions(b.ID))
	for _, ev := range s.evidenceOf(b) {
		s.Equal(store.StatusConfirmed, ev.Status)
		s.Equal(4, ev.Attempts, "attempts seen by the user")
	}
	s.Equal(5.0, s.counted("keeper_anchor_attempts_total", "SubmitAnchor"), "attempts on /metrics")
	s.Equal(4.0, s.counted("keeper_anchor_retries_total", "SubmitAnchor"), "retries on /metrics")
	s.Zero(s.counted("keeper_anchor_retries_total", "ConfirmAnchor"))
}

func (s *AnchorBatchSuite) TestBackoffIsCappedAtFiveMinutes() {
	b := retry.Anchor
	s.Equal(5*time.Second, b.Delay(1))
	s.Equal(160*time.Second, b.Delay(6))
	s.Equal(300*time.Second, b.Delay(7))
	s.Equal(300*time.Second, b.Delay(1000), "attempts are clamped, the shift never overflows")
}

func (s *AnchorBatchSuite) TestPermanentFailureDeadLettersAtOnce() {
	b := s.formBatch(4)
	s.chain.FailSubmits(1, true)
	s.env.ExecuteWorkflow(workflows.AnchorBatch, s.input(b, 20))
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().Error(s.env.GetWorkflowError())
	s.Len(s.starts["SubmitAnchor"], 1, "a permanent error is not retried")
	for _, ev := range s.evidenceOf(b) {
		s.Equal(store.StatusDeadLetter, ev.Status)
		s.Contains(ev.LastError, "injected permanent failure")
	}
	got, err := s.store.GetBatch(context.Background(), b.ID)
	s.Require().NoError(err)
	s.Equal(store.BatchDeadLetter, got.State)
}

func (s *AnchorBatchSuite) TestExhaustedAttemptsDeadLetter() {
	b := s.formBatch(2)
	s.chain.FailSubmits(100, false)
	s.env.ExecuteWorkflow(workflows.AnchorBatch, s.input(b, 3))
	s.Require().Error(s.env.GetWorkflowError())
	s.Len(s.starts["SubmitAnchor"], 3)
	for _, ev := range s.evidenceOf(b) {
		s.Equal(store.StatusDeadLetter, ev.Status)
		s.Equal(3, ev.Attempts)
		s.Contains(ev.LastError, "injected transient failure")
	}
}

func (s *AnchorBatchSuite) TestDroppedTransactionIsSubmittedAgain() {
	b := s.formBatch(2)
	s.chain.DropNext(1)
	s.env.ExecuteWorkflow(workflows.AnchorBatch, s.input(b, 20))
	s.Require().NoError(s.env.GetWorkflowError())
	var res workflows.AnchorBatchResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal(1, res.Resubmits)
	s.Len(s.starts["SubmitAnchor"], 2)
	s.Equal(1, s.chain.Transactions(b.ID), "the rebroadcast reuses the journaled transaction")
	s.Equal(1.0, s.counted("keeper_anchor_dropped_total", ""), "the drop on /metrics")
	s.Zero(s.counted("keeper_anchor_retries_total", "SubmitAnchor"), "a resubmission is a new activity, not a retry")
}

func (s *AnchorBatchSuite) TestTransientFailuresLongerThanTwentyAttemptsNeverDeadLetter() {
	if s.revision == workflows.RevisionLocalSteps {
		s.T().Skip("revision 1 batches were started with an attempt limit; its local submit has no unlimited form")
	}
	b := s.formBatch(3)
	// An outage of 30 submit attempts, then 25 status lookups: on the
	// default schedule about two hours of failures.
	s.chain.FailSubmits(30, false)
	s.chain.FailStatus(25)
	// KEEPER_MAX_ATTEMPTS=0 gives Temporal's MaximumAttempts 0 (no limit),
	// which the SDK's test environment caps at 10 attempts: a limit far
	// beyond the outage stands in for it here (the end-to-end test
	// TestAnOutageLongerThanTwentyAttemptsDeadLettersNothing runs 0 on a
	// real server).
	s.env.ExecuteWorkflow(workflows.AnchorBatch, s.input(b, 1000))
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	var res workflows.AnchorBatchResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	s.Equal("confirmed", res.Status)
	for _, ev := range s.evidenceOf(b) {
		s.Equal(store.StatusConfirmed, ev.Status)
	}

	starts := s.starts["SubmitAnchor"]
	s.Require().Len(starts, 31, "every failed attempt was retried")
	for i := 0; i+1 < len(starts); i++ {
		want := retry.Anchor.Delay(i + 1)
		got := starts[i+1].Sub(starts[i])
		s.GreaterOrEqual(got, want, "delay after failed attempt %d follows the schedule", i+1)
		s.Less(got, want+time.Second+100*time.Millisecond, "delay after failed attempt %d (jitter is below 1 s)", i+1)
	}
	s.Equal(300*time.Second, starts[30].Sub(starts[29]).Truncate(time.Second), "the delay stays at its 5-minute cap")
	s.Equal(31.0, s.counted("keeper_anchor_attempts_total", "SubmitAnchor"))
	s.Equal(30.0, s.counted("keeper_anchor_retries_total", "SubmitAnchor"), "attempts after the local ones count on as retries")
	s.Equal(25.0, s.counted("keeper_anchor_retries_total", "ConfirmAnchor"))
	s.Len(s.starts["DeadLetter"], 0)
	if s.revision >= workflows.RevisionOutlastOutages {
		// Each local retry after a timer adds events to the history; an
		// activity's retries add none.
		s.Equal(workflows.LocalSubmitAttempts, s.local["SubmitAnchor"], "after its local attempts the submit goes on as an activity")
	}
}

func (s *AnchorBatchSuite) TestPermanentFailureAfterTransientOnesDeadLettersAtOnce() {
	if s.revision == workflows.RevisionLocalSteps {
		s.T().Skip("revision 1 batches were started with an attempt limit")
	}
	b := s.formBatch(2)
	s.chain.FailSubmits(4, false)
	s.env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, _ converter.EncodedValues) {
		s.starts[info.ActivityType.Name] = append(s.starts[info.ActivityType.Name], s.env.Now())
		if info.ActivityType.Name == "SubmitAnchor" && info.Attempt == 2 {
			s.chain.FailSubmits(1, true) // the node now rejects the payload for good
		}
	})
	s.env.ExecuteWorkflow(workflows.AnchorBatch, s.input(b, 1000))
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().Error(s.env.GetWorkflowError())
	s.Less(len(s.starts["SubmitAnchor"]), 5, "a permanent error ends the retries")
	for _, ev := range s.evidenceOf(b) {
		s.Equal(store.StatusDeadLetter, ev.Status)
		s.Contains(ev.LastError, "injected permanent failure")
	}
}
