package workflows_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/suite"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/testsuite"

	"github.com/keeperhq/keeper/internal/epoch"
	"github.com/keeperhq/keeper/internal/rewards"
	"github.com/keeperhq/keeper/internal/settlement"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/workflows"
	"github.com/keeperhq/keeper/merkle"
)

type EpochComputeSuite struct {
	suite.Suite
	testsuite.WorkflowTestSuite
	env       *testsuite.TestWorkflowEnvironment
	store     *store.Store
	acts      *epoch.Activities
	artifacts string
	// ledgerFault, when set, answers a ledger request instead of the ledger.
	ledgerFault func(n int64) int
	ledgerCalls atomic.Int64
}

func TestEpochCompute(t *testing.T) { suite.Run(t, new(EpochComputeSuite)) }

func (s *EpochComputeSuite) SetupTest() {
	dir := s.T().TempDir()
	st := storetest.Open(s.T(), filepath.Join(dir, "keeper.db"))
	s.store, s.artifacts, s.ledgerFault = st, filepath.Join(dir, "artifacts"), nil
	s.ledgerCalls.Store(0)
	builtin := (&settlement.Server{Store: st}).Handler()
	faulty := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.ledgerCalls.Add(1)
		if s.ledgerFault != nil {
			if code := s.ledgerFault(n); code != 0 {
				http.Error(w, `{"code":"unavailable","message":"injected"}`, code)
				return
			}
		}
		builtin.ServeHTTP(w, r)
	})
	s.acts = &epoch.Activities{
		Store: st, ArtifactDir: s.artifacts, Chains: []string{"stub"}, CallTimeout: 5 * time.Second,
		Ledger:  &settlement.Client{BaseURL: "http://ledger.test", HTTP: settlement.InProcess(faulty)},
		HTTP:    http.DefaultClient,
		Metrics: epoch.NewUpstreamMetrics(),
	}
	s.env = s.NewTestWorkflowEnvironment()
	epoch.RegisterActivities(s.env, s.acts)
}

// inline creates an epoch whose usage came inline, as the API stores it.
func (s *EpochComputeSuite) inline(id string, pool uint64, usage ...rewards.Usage) workflows.EpochInput {
	sealed, err := rewards.Seal(rewards.AmountOf(pool), usage)
	s.Require().NoError(err)
	return s.create(store.NewEpoch{ID: id, RequestHash: rewards.Hash(sealed), Pool: fmt.Sprint(pool), Usage: sealed})
}

// fromSource creates an epoch whose usage an accounting service answers.
func (s *EpochComputeSuite) fromSource(id string, pool uint64, handler http.HandlerFunc) workflows.EpochInput {
	srv := httptest.NewServer(handler)
	s.T().Cleanup(srv.Close)
	return s.create(store.NewEpoch{ID: id, RequestHash: "source-" + id, Pool: fmt.Sprint(pool), Source: srv.URL + "/usage"})
}

func (s *EpochComputeSuite) create(ne store.NewEpoch) workflows.EpochInput {
	ne.Deadline = time.Now().Add(time.Hour)
	_, created, err := s.store.CreateEpoch(context.Background(), ne, 64)
	s.Require().NoError(err)
	s.Require().True(created)
	return workflows.EpochInput{EpochID: ne.ID, Run: 1, Policy: workflows.EpochPolicy{ActivityTimeout: time.Minute, Heartbeat: 10 * time.Second}}
}

func answer(body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(body)) }
}

func (s *EpochComputeSuite) epoch(id string) store.Epoch {
	e, err := s.store.GetEpoch(context.Background(), id)
	s.Require().NoError(err)
	return e
}

// ledgerHolds returns the built-in ledger's intents of an epoch, by account.
func (s *EpochComputeSuite) ledgerHolds(epoch string) map[string]string {
	items, err := s.store.LedgerIntents(context.Background(), epoch, "", 100_000)
	s.Require().NoError(err)
	out := map[string]string{}
	for _, li := range items {
		s.Require().NotContains(out, li.Account, "one intent per account")
		s.Equal(settlement.Key(epoch, li.Account), li.IdempotencyKey)
		out[li.Account] = li.Amount
	}
	return out
}

func (s *EpochComputeSuite) run(in workflows.EpochInput) workflows.EpochResult {
	s.env.ExecuteWorkflow(workflows.EpochCompute, in)
	s.Require().True(s.env.IsWorkflowCompleted())
	s.Require().NoError(s.env.GetWorkflowError())
	var res workflows.EpochResult
	s.Require().NoError(s.env.GetWorkflowResult(&res))
	return res
}

func (s *EpochComputeSuite) TestCompletesAnEpochWithArtifactsIntentsAndAnAnchoredCommitment() {
	in := s.inline("2026-11", 1000, rewards.Usage{Account: "carol", Units: "1"}, rewards.Usage{Account: "alice", Units: "1"}, rewards.Usage{Account: "bob", Units: "1"})
	res := s.run(in)
	s.Equal(store.EpochCompleted, res.Status)
	s.Equal("1000", res.TotalPaid)
	s.Equal(3, res.Intents)

	// 1000/3 = 333.33… each; the leftover unit goes to the first account.
	s.Equal(map[string]string{"alice": "334", "bob": "333", "carol": "333"}, s.ledgerHolds("2026-11"))

	e := s.epoch("2026-11")
	s.Equal(store.EpochCompleted, e.Status)
	s.Equal(3, e.IntentsAcknowledged)
	s.Equal("1000", e.TotalPaid)
	s.Equal(res.InputsHash, e.InputsHash)

	// The commitment is the RFC 6962 root over the payout lines.
	leaves := [][]byte{[]byte("alice 334"), []byte("bob 333"), []byte("carol 333")}
	tree, err := merkle.Build(leaves)
	s.Require().NoError(err)
	root := tree.Root()
	s.Equal(hex.EncodeToString(root[:]), res.Commitment)
	com, err := os.ReadFile(filepath.Join(s.artifacts, e.CommitmentPath))
	s.Require().NoError(err)
	s.Equal(res.Commitment+"\n", string(com))

	var run struct {
		InputsHash string `json:"inputs_hash"`
		Totals     struct {
			Accounts  int    `json:"accounts"`
			TotalPaid string `json:"total_paid"`
		} `json:"totals"`
		Commitment string `json:"commitment"`
		Payouts    []struct{ Account, Units, Amount string }
	}
	raw, err := os.ReadFile(filepath.Join(s.artifacts, e.RunPath))
	s.Require().NoError(err)
	s.Require().NoError(json.Unmarshal(raw, &run))
	s.Equal(e.InputsHash, run.InputsHash)
	s.Equal(3, run.Totals.Accounts)
	s.Equal(res.Commitment, run.Commitment)
	s.Len(run.Payouts, 3)
	s.Equal("alice", run.Payouts[0].Account)

	// The commitment went to intake as evidence on the configured chains.
	ev, err := s.store.EvidenceByKey(context.Background(), "epoch-2026-11-commitment")
	s.Require().NoError(err)
	s.Equal(res.EvidenceID, ev.ID)
	s.Equal(res.Commitment, hex.EncodeToString(ev.Digest[:]))
	s.Equal([]string{"stub"}, ev.Chains)
}

func (s *EpochComputeSuite) TestADuplicateAccountFromTheSourceQuarantinesTheEpochWithoutIntents() {
	in := s.fromSource("dup", 1000, answer(`[{"account":"alice","units":"5"},{"account":"bob","units":"5"},{"account":"alice","units":"2"}]`))
	res := s.run(in)
	s.Equal(store.EpochQuarantined, res.Status)
	s.Contains(res.Reason, "duplicate account alice")
	e := s.epoch("dup")
	s.Equal(store.EpochQuarantined, e.Status)
	s.Contains(e.Reason, "duplicate account alice")
	s.NotEmpty(e.InputsHash, "the inputs stay sealed for inspection")
	s.Empty(s.ledgerHolds("dup"))
	s.Zero(s.ledgerCalls.Load(), "no intent was even sent")
	s.Empty(e.EvidenceID)
}

func (s *EpochComputeSuite) TestZeroTotalUnitsQuarantinesTheEpochWithoutIntents() {
	in := s.fromSource("zero", 1000, answer(`[{"account":"alice","units":"0"},{"account":"bob","units":"0"}]`))
	res := s.run(in)
	s.Equal(store.EpochQuarantined, res.Status)
	s.Contains(res.Reason, "zero total units")
	s.Equal(store.EpochQuarantined, s.epoch("zero").Status)
	s.Zero(s.ledgerCalls.Load())
}

func (s *EpochComputeSuite) TestASourceThatFailsTwiceIsAskedAgainWithinTheSameCall() {
	var calls atomic.Int64
	in := s.fromSource("flaky", 10, func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) <= 2 {
			http.Error(w, "try later", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte(`[{"account":"a","units":"3"},{"account":"b","units":"7"}]`))
	})
	res := s.run(in)
	s.Equal(store.EpochCompleted, res.Status)
	s.EqualValues(3, calls.Load())
	s.Equal(2.0, counterValue(s.acts.Metrics.Retries.WithLabelValues("source")))
	s.Equal(map[string]string{"a": "3", "b": "7"}, s.ledgerHolds("flaky"))
}

func (s *EpochComputeSuite) TestASourceThatSaysNotFoundFailsTheEpochWithTheReason() {
	var calls atomic.Int64
	in := s.fromSource("gone", 10, func(w http.ResponseWriter, r *http.Request) { calls.Add(1); http.NotFound(w, r) })
	s.env.ExecuteWorkflow(workflows.EpochCompute, in)
	s.Require().Error(s.env.GetWorkflowError())
	s.EqualValues(1, calls.Load(), "a refusal is not asked again")
	e := s.epoch("gone")
	s.Equal(store.EpochFailed, e.Status)
	s.Contains(e.Reason, "HTTP 404")
	s.Zero(s.ledgerCalls.Load())
}

func (s *EpochComputeSuite) TestALedgerThatRefusesAnIntentQuarantinesTheEpochWithTheReason() {
	_, _, err := s.store.RecordIntent(context.Background(), store.LedgerIntent{IdempotencyKey: settlement.Key("clash", "alice"), Epoch: "clash", Account: "alice", Amount: "1"})
	s.Require().NoError(err)
	in := s.inline("clash", 100, rewards.Usage{Account: "alice", Units: "1"})
	res := s.run(in)
	s.Equal(store.EpochQuarantined, res.Status)
	e := s.epoch("clash")
	s.Equal(store.EpochQuarantined, e.Status)
	s.True(strings.HasPrefix(e.Reason, workflows.IntentsQuarantinePrefix), e.Reason)
	s.Contains(e.Reason, "idempotency_key_reused")
	s.Empty(e.EvidenceID, "a quarantined epoch's commitment is not anchored")
	s.Equal(map[string]string{"alice": "1"}, s.ledgerHolds("clash"), "the ledger kept its original intent")
}

func (s *EpochComputeSuite) TestALedgerDownUntilTheDeadlineQuarantinesTheEpochBeforeTheDeadline() {
	usage := make([]rewards.Usage, 1500)
	for i := range usage {
		usage[i] = rewards.Usage{Account: fmt.Sprintf("acct-%05d", i), Units: "1"}
	}
	in := s.inline("down", 1500, usage...)
	// The first page is booked, then the ledger answers 503 for good.
	s.ledgerFault = func(n int64) int {
		if n > epoch.IntentPage {
			return http.StatusServiceUnavailable
		}
		return 0
	}
	s.env.SetStartWorkflowOptions(client.StartWorkflowOptions{WorkflowExecutionTimeout: 3 * time.Minute})
	res := s.run(in)
	s.Equal(store.EpochQuarantined, res.Status)
	e := s.epoch("down")
	s.Equal(store.EpochQuarantined, e.Status)
	s.True(strings.HasPrefix(e.Reason, workflows.IntentsQuarantinePrefix), e.Reason)
	s.Equal(epoch.IntentPage, e.IntentsAcknowledged, "what the ledger acknowledged before it went down is recorded")
	s.Len(s.ledgerHolds("down"), epoch.IntentPage)
}

func (s *EpochComputeSuite) TestIntentsResumeAfterTheLedgerFailsMidwayAndAreBookedOnce() {
	usage := make([]rewards.Usage, 2500)
	for i := range usage {
		usage[i] = rewards.Usage{Account: fmt.Sprintf("acct-%05d", i), Units: fmt.Sprint(i%7 + 1)}
	}
	in := s.inline("resume", 1_000_000, usage...)
	// The ledger goes down for a while in the second page: the in-call
	// retries give up, the activity fails and Temporal retries it.
	s.ledgerFault = func(n int64) int {
		if n > 1500 && n <= 1600 {
			return http.StatusBadGateway
		}
		return 0
	}
	res := s.run(in)
	s.Equal(store.EpochCompleted, res.Status)
	held := s.ledgerHolds("resume")
	s.Len(held, 2500)
	var sum rewards.Amount
	for _, amount := range held {
		a, err := rewards.ParseAmount(amount)
		s.Require().NoError(err)
		sum, _ = sum.Add(a)
	}
	s.Equal("1000000", sum.String())
	s.Less(s.ledgerCalls.Load(), int64(2500+epoch.IntentPage+200), "the retry resumed at the failed page, not at the first")
	s.Equal(2500, s.epoch("resume").IntentsAcknowledged)
}

func (s *EpochComputeSuite) TestAnAccountWithQuotesIsPaidAndRunJSONStaysValid() {
	in := s.inline("quotes", 977, rewards.Usage{Account: "x", Units: "2"}, rewards.Usage{Account: `q"uote\\`, Units: "9"})
	s.Equal(store.EpochCompleted, s.run(in).Status)
	raw, err := os.ReadFile(filepath.Join(s.artifacts, s.epoch("quotes").RunPath))
	s.Require().NoError(err)
	var run struct {
		Payouts []struct{ Account, Amount string }
	}
	s.Require().NoError(json.Unmarshal(raw, &run))
	s.Equal(`q"uote\\`, run.Payouts[0].Account)
	s.Contains(s.ledgerHolds("quotes"), `q"uote\\`)
}

func counterValue(c prometheus.Counter) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		return -1
	}
	return m.GetCounter().GetValue()
}
