package epoch_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/epoch"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/settlement"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/temporalfake"
	"github.com/keeperhq/keeper/internal/workflows"
	"github.com/keeperhq/keeper/merkle"
)

type start struct {
	opts client.StartWorkflowOptions
	in   workflows.EpochInput
}

// started lists the EpochCompute workflows the API started.
func started(c *temporalfake.Client) []start {
	var out []start
	for _, s := range c.Starts() {
		if s.Workflow == "EpochCompute" {
			out = append(out, start{s.Options, s.Input().(workflows.EpochInput)})
		}
	}
	return out
}

// fixture serves the epoch routes, with the built-in ledger's, as a node
// does: behind the API (auth, limits, clean paths, /metrics) with the epoch
// metrics registered beside the API's, every exchange checked against
// openapi.json.
type fixture struct {
	st       *store.Store
	temporal *temporalfake.Client
	epochs   *epoch.HTTP
	api      *starter.API
	h        http.Handler
}

func newFixture(t *testing.T, maxInFlight int) *fixture {
	t.Helper()
	st := storetest.SQLite(t)
	tc := &temporalfake.Client{}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	drain := &httpapi.Drain{}
	epochs := &epoch.HTTP{Store: st, Temporal: tc, MaxBodyBytes: 4096, Logger: logger, Draining: drain,
		Options: epoch.Options{MaxInFlight: maxInFlight, Duration: time.Hour, Heartbeat: 10 * time.Second},
		Ledger:  &settlement.Server{Store: st},
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(epoch.NewCollector(st))
	api := &starter.API{Store: st, Logger: logger,
		Features: []starter.Feature{epochs}, Draining: drain, Registry: reg}
	epochs.Busy = func() { api.CountBusy("compute") }
	return &fixture{st: st, temporal: tc, epochs: epochs, api: api, h: openapitest.Handler(t, api.Handler())}
}

func (f *fixture) do(t *testing.T, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	return apitest.Do(t, f.h, method, path, body, nil)
}

func (f *fixture) compute(t *testing.T, id, body string) *httptest.ResponseRecorder {
	t.Helper()
	return f.do(t, "POST", "/rewarder/epochs/"+id+"/compute", body)
}

const threeAccounts = `{"pool":"1000","usage":[{"account":"carol","units":"1"},{"account":"alice","units":"01"},{"account":"bob","units":"1"}]}`

func TestComputeQueuesTheEpochAndStartsItsWorkflow(t *testing.T) {
	f := newFixture(t, 64)
	rec := f.compute(t, "2026-11", threeAccounts)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	assert.Equal(t, "/rewarder/epochs/2026-11", rec.Header().Get("Location"))
	m := apitest.Decode[api.Manifest](t, rec)
	assert.Equal(t, "queued", m.Status)
	assert.Equal(t, "1000", m.Pool)
	assert.Equal(t, m.RequestHash, m.InputsHash, "inline usage is sealed at intake: its hash is known at once")
	assert.Equal(t, "/rewarder/epochs/2026-11", m.Links["self"])

	starts := started(f.temporal)
	require.Len(t, starts, 1)
	s := starts[0]
	assert.Equal(t, "epoch-2026-11", s.opts.ID)
	assert.Equal(t, workflows.EpochTaskQueue, s.opts.TaskQueue)
	assert.Equal(t, enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, s.opts.WorkflowIDConflictPolicy)
	assert.Equal(t, enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY, s.opts.WorkflowIDReusePolicy)
	assert.Equal(t, 30*time.Minute, s.opts.WorkflowExecutionTimeout, "half the epoch duration")
	assert.Equal(t, workflows.EpochInput{EpochID: "2026-11", Run: 1, Policy: workflows.EpochPolicy{ActivityTimeout: 30 * time.Minute, Heartbeat: 10 * time.Second}}, s.in)

	got := f.do(t, "GET", "/rewarder/epochs/2026-11", "")
	require.Equal(t, http.StatusOK, got.Code)
	assert.Equal(t, m.RequestHash, apitest.Decode[api.Manifest](t, got).RequestHash)
}

func TestTheCallersDeadlineShortensTheExecutionTimeout(t *testing.T) {
	f := newFixture(t, 64)
	body := `{"pool":"10","usage":[{"account":"a","units":"1"}],"deadline":"90s"}`
	require.Equal(t, http.StatusAccepted, f.compute(t, "soon", body).Code)
	assert.Equal(t, 90*time.Second, started(f.temporal)[0].opts.WorkflowExecutionTimeout)
	body = `{"pool":"10","usage":[{"account":"a","units":"1"}],"deadline":"5h"}`
	require.Equal(t, http.StatusAccepted, f.compute(t, "later", body).Code)
	assert.Equal(t, 30*time.Minute, started(f.temporal)[1].opts.WorkflowExecutionTimeout, "a later deadline does not extend half the epoch duration")
}

func TestTheSameRequestAgainJoinsTheEpochAndOtherInputsAreAConflict(t *testing.T) {
	f := newFixture(t, 64)
	first := apitest.Decode[api.Manifest](t, f.compute(t, "e1", threeAccounts))
	// The same inputs in another order and spelling are the same request.
	again := f.compute(t, "e1", `{"pool":"01000","usage":[{"account":"alice","units":"1"},{"account":"bob","units":"1"},{"account":"carol","units":"1"}]}`)
	require.Equal(t, http.StatusAccepted, again.Code, again.Body.String())
	assert.Equal(t, first.RequestHash, apitest.Decode[api.Manifest](t, again).RequestHash)
	for _, s := range started(f.temporal) {
		assert.Equal(t, "epoch-e1", s.opts.ID, "every start names the same workflow id; Temporal keeps one run")
	}

	other := f.compute(t, "e1", `{"pool":"1001","usage":[{"account":"alice","units":"1"}]}`)
	require.Equal(t, http.StatusConflict, other.Code, other.Body.String())
	e := apitest.Decode[apitest.Problem](t, other)
	assert.Equal(t, "epoch_conflict", e.Code)
	assert.Equal(t, "id", e.Field)
}

func TestACompletedEpochAskedForAgainAnswersItsManifestAndStartsNothing(t *testing.T) {
	f := newFixture(t, 64)
	require.Equal(t, http.StatusAccepted, f.compute(t, "done", threeAccounts).Code)
	require.NoError(t, f.st.FinishEpoch(context.Background(), "done", 1, store.EpochCompleted, ""))
	f.temporal.SetStatus(workflows.EpochWorkflowID("done"), enums.WORKFLOW_EXECUTION_STATUS_COMPLETED)

	rec := f.compute(t, "done", threeAccounts)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, "completed", apitest.Decode[api.Manifest](t, rec).Status)
	assert.Len(t, started(f.temporal), 1)
}

func TestAFailedEpochAskedForAgainRunsAgain(t *testing.T) {
	f := newFixture(t, 64)
	require.Equal(t, http.StatusAccepted, f.compute(t, "retry", threeAccounts).Code)
	require.NoError(t, f.st.FinishEpoch(context.Background(), "retry", 1, store.EpochFailed, "source down"))
	f.temporal.SetStatus(workflows.EpochWorkflowID("retry"), enums.WORKFLOW_EXECUTION_STATUS_FAILED) // its workflow failed

	rec := f.compute(t, "retry", threeAccounts)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	m := apitest.Decode[api.Manifest](t, rec)
	assert.Equal(t, "queued", m.Status)
	assert.Equal(t, 2, m.Run)
	assert.Empty(t, m.Reason)
	starts := started(f.temporal)
	require.Len(t, starts, 2)
	assert.Equal(t, 2, starts[1].in.Run)
	assert.Equal(t, enums.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING, starts[1].opts.WorkflowIDConflictPolicy)
}

func TestTheEpochBeyondTheInFlightLimitIsRefusedWith429(t *testing.T) {
	f := newFixture(t, 2)
	require.Equal(t, http.StatusAccepted, f.compute(t, "one", threeAccounts).Code)
	require.Equal(t, http.StatusAccepted, f.compute(t, "two", threeAccounts).Code)
	rec := f.compute(t, "three", threeAccounts)
	require.Equal(t, http.StatusTooManyRequests, rec.Code, rec.Body.String())
	assert.Equal(t, "5", rec.Header().Get("Retry-After"))
	assert.Equal(t, "busy", apitest.Decode[apitest.Problem](t, rec).Code)
	assert.Equal(t, http.StatusNotFound, f.do(t, "GET", "/rewarder/epochs/three", "").Code, "a refused epoch is not stored")

	// A repeat of an epoch in flight is not new work: it is answered.
	assert.Equal(t, http.StatusAccepted, f.compute(t, "one", threeAccounts).Code)
	// Once one finishes there is room again.
	require.NoError(t, f.st.FinishEpoch(context.Background(), "one", 1, store.EpochCompleted, ""))
	f.temporal.SetStatus(workflows.EpochWorkflowID("one"), enums.WORKFLOW_EXECUTION_STATUS_COMPLETED)
	assert.Equal(t, http.StatusAccepted, f.compute(t, "three", threeAccounts).Code)

	metrics := f.do(t, "GET", "/metrics", "").Body.String()
	assert.Contains(t, metrics, `keeper_busy_rejections_total{endpoint="compute"} 1`)
	assert.Contains(t, metrics, `keeper_queue_depth{queue="epochs"} 2`)
}

func TestComputeWhileDrainingIs503(t *testing.T) {
	f := newFixture(t, 64)
	f.api.Drain()
	rec := f.compute(t, "late", threeAccounts)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "draining", apitest.Decode[apitest.Problem](t, rec).Code)
	assert.Empty(t, started(f.temporal))
}

func TestWhenTemporalIsDownTheSameRequestStartsTheEpochLater(t *testing.T) {
	f := newFixture(t, 64)
	f.temporal.Fail(errors.New("connection refused"))
	rec := f.compute(t, "later", threeAccounts)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "temporal_unavailable", apitest.Decode[apitest.Problem](t, rec).Code)

	require.Equal(t, http.StatusAccepted, f.compute(t, "later", threeAccounts).Code)
	require.Len(t, started(f.temporal), 1)
}

func TestAnEpochPastItsDeadlineIsFailedAndLeavesRoom(t *testing.T) {
	f := newFixture(t, 1)
	_, _, err := f.st.CreateEpoch(context.Background(), store.NewEpoch{ID: "slow", RequestHash: "h", Pool: "1", Source: "http://x", Deadline: time.Now().Add(-time.Second)}, 1)
	require.NoError(t, err)
	m := apitest.Decode[api.Manifest](t, f.do(t, "GET", "/rewarder/epochs/slow", ""))
	assert.Equal(t, "failed", m.Status)
	assert.Equal(t, "deadline exceeded", m.Reason)
	assert.Equal(t, http.StatusAccepted, f.compute(t, "next", threeAccounts).Code, "an epoch past its deadline is not in flight")
}

func TestTheManifestShowsArtifactsIntentsAndTheCommitmentsReceipt(t *testing.T) {
	f := newFixture(t, 64)
	ctx := context.Background()
	require.Equal(t, http.StatusAccepted, f.compute(t, "full", threeAccounts).Code)
	require.NoError(t, f.st.StartEpoch(ctx, "full", 1))
	require.NoError(t, f.st.RecordSealed(ctx, "full", 1, "aa", "inputs/aa", 3))
	require.NoError(t, f.st.RecordComputed(ctx, "full", 1, store.Computed{PayoutsHash: "bb", PayoutsPath: "epochs/full/payouts.txt", Accounts: 3, TotalUnits: "3", TotalPaid: "1000", Intents: 3}))
	require.NoError(t, f.st.RecordArtifacts(ctx, "full", 1, store.Artifacts{RunHash: "cc", RunPath: "epochs/full/run.json", Commitment: strings.Repeat("ab", 32), CommitmentHash: "dd", CommitmentPath: "epochs/full/commitment"}))
	require.NoError(t, f.st.RecordIntents(ctx, "full", 1, 3, 3, true))
	ne := store.NewEvidence{Chains: []string{"stub"}, Priority: 5, IdempotencyKey: "epoch-full-commitment"}
	copy(ne.Digest[:], []byte(strings.Repeat("\xab", 32)))
	ev, _, err := f.st.InsertEvidence(ctx, ne)
	require.NoError(t, err)
	require.NoError(t, f.st.RecordAnchor(ctx, "full", 1, ev.ID))
	require.NoError(t, f.st.FinishEpoch(ctx, "full", 1, store.EpochCompleted, ""))

	m := apitest.Decode[api.Manifest](t, f.do(t, "GET", "/rewarder/epochs/full", ""))
	assert.Equal(t, "completed", m.Status)
	assert.Equal(t, "1000", m.TotalPaid)
	assert.Equal(t, 3, m.Accounts)
	assert.Len(t, m.Artifacts, 4)
	assert.Equal(t, "run.json", m.Artifacts[2].Name)
	assert.Equal(t, "cc", m.Artifacts[2].SHA256)
	assert.Equal(t, 3, m.Intents.Acknowledged)
	require.NotNil(t, m.Anchor)
	assert.Equal(t, ev.ID, m.Anchor.EvidenceID)
	assert.Equal(t, "pending", m.Anchor.Status)
	assert.Nil(t, m.Anchor.Receipt, "no receipt before the anchor is confirmed")
	for _, k := range []string{"queued_at", "started_at", "sealed_at", "computed_at", "written_at", "intents_at", "anchored_at", "finished_at"} {
		assert.Contains(t, m.Timings, k)
	}

	// Once the commitment's batch is confirmed the manifest carries its receipt.
	b, ok, err := f.st.FormBatch(ctx, "stub", 10)
	require.NoError(t, err)
	require.True(t, ok)
	leaves, err := f.st.BatchLeaves(ctx, b.ID)
	require.NoError(t, err)
	require.Len(t, leaves, 1)
	root := merkle.LeafHash(leaves[0]) // a one-leaf tree
	require.NoError(t, f.st.MarkSubmitted(ctx, b.ID, root, "stub:tx"))
	require.NoError(t, f.st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: "stub:tx", Block: 7, BlockTime: time.Now()}))
	m = apitest.Decode[api.Manifest](t, f.do(t, "GET", "/rewarder/epochs/full", ""))
	require.NotNil(t, m.Anchor.Receipt)
	assert.Equal(t, "confirmed", m.Anchor.Status)
	assert.Equal(t, strings.Repeat("ab", 32), m.Anchor.Receipt.Digest)
	require.NoError(t, m.Anchor.Receipt.CheckProof(m.Anchor.Receipt.Anchors[0]))
	assert.Equal(t, "/v1/evidence/"+ev.ID+"/receipt", m.Links["receipt"])
}

func TestBadComputeRequestsAreRefusedWithAJSONErrorAndStoreNothing(t *testing.T) {
	f := newFixture(t, 64)
	usage := `"usage":[{"account":"a","units":"1"}]`
	big := `{"pool":"1","usage":[` + strings.Repeat(`{"account":"acct","units":"1"},`, 200) + `{"account":"z","units":"1"}]}`
	rows := []struct {
		name, id, body string
		status         int
		code, field    string
	}{
		{"an id starting with a dot", ".hidden", `{"pool":"1",` + usage + `}`, 400, "invalid_id", "id"},
		{"an id too long", strings.Repeat("e", 65), `{"pool":"1",` + usage + `}`, 400, "invalid_id", "id"},
		{"an id with a space", "a%20b", `{"pool":"1",` + usage + `}`, 400, "invalid_id", "id"},
		{"an empty body", "e", ``, 400, "invalid_json", ""},
		{"not JSON", "e", `pool=1`, 400, "invalid_json", ""},
		{"an unknown field", "e", `{"pool":"1",` + usage + `,"currency":"EUR"}`, 400, "unknown_field", "currency"},
		{"an unknown field in a usage entry", "e", `{"pool":"1","usage":[{"account":"a","units":"1","weight":2}]}`, 400, "unknown_field", "usage[0].weight"},
		{"no pool", "e", `{` + usage + `}`, 400, "missing_field", "pool"},
		{"a pool of zero", "e", `{"pool":"0",` + usage + `}`, 400, "invalid_pool", "pool"},
		{"a negative pool", "e", `{"pool":"-5",` + usage + `}`, 400, "invalid_pool", "pool"},
		{"a fractional pool", "e", `{"pool":"1.5",` + usage + `}`, 400, "invalid_pool", "pool"},
		{"a pool above 2^127", "e", `{"pool":"170141183460469231731687303715884105729",` + usage + `}`, 400, "invalid_pool", "pool"},
		{"a pool as a JSON number", "e", `{"pool":1000,` + usage + `}`, 400, "invalid_type", "pool"},
		{"neither usage nor source", "e", `{"pool":"1"}`, 400, "missing_field", "usage"},
		{"both usage and source", "e", `{"pool":"1",` + usage + `,"source":"http://acct.example/u"}`, 400, "conflicting_fields", "usage"},
		{"empty usage", "e", `{"pool":"1","usage":[]}`, 400, "empty_usage", "usage"},
		{"a duplicate account", "e", `{"pool":"1","usage":[{"account":"a","units":"1"},{"account":"a","units":"2"}]}`, 400, "duplicate_account", "usage[1].account"},
		{"negative units", "e", `{"pool":"1","usage":[{"account":"a","units":"-1"}]}`, 400, "invalid_units", "usage[0].units"},
		{"zero units", "e", `{"pool":"1","usage":[{"account":"a","units":"0"}]}`, 400, "invalid_units", "usage[0].units"},
		{"units that are not an integer", "e", `{"pool":"1","usage":[{"account":"a","units":"1e3"}]}`, 400, "invalid_units", "usage[0].units"},
		{"units as a JSON number", "e", `{"pool":"1","usage":[{"account":"a","units":1}]}`, 400, "invalid_type", "usage.units"},
		{"an account with a space", "e", `{"pool":"1","usage":[{"account":"a b","units":"1"}]}`, 400, "invalid_account", "usage[0].account"},
		{"a source that is not http", "e", `{"pool":"1","source":"ftp://acct.example/u"}`, 400, "invalid_source", "source"},
		{"a source with credentials", "e", `{"pool":"1","source":"http://u:p@acct.example/u"}`, 400, "invalid_source", "source"},
		{"a source on the cloud metadata address", "e", `{"pool":"1","source":"http://169.254.169.254/latest/meta-data/"}`, 400, "invalid_source", "source"},
		{"a source on a private address over https", "e", `{"pool":"1","source":"https://10.0.0.7/usage"}`, 400, "invalid_source", "source"},
		{"a source on loopback by name", "e", `{"pool":"1","source":"https://localhost:8080/usage"}`, 400, "invalid_source", "source"},
		{"a plain-http source in production", "e", `{"pool":"1","source":"http://acct.example/u"}`, 400, "invalid_source", "source"},
		{"a source on a NAT64 address of the cloud metadata address", "e", `{"pool":"1","source":"https://[64:ff9b::a9fe:a9fe]/"}`, 400, "invalid_source", "source"},
		{"a source on a NAT64 address of loopback", "e", `{"pool":"1","source":"https://[64:ff9b::7f00:1]/"}`, 400, "invalid_source", "source"},
		{"a source on a 6to4 address of the cloud metadata address", "e", `{"pool":"1","source":"https://[2002:a9fe:a9fe::1]/"}`, 400, "invalid_source", "source"},
		{"a source on an IPv4-compatible address of the cloud metadata address", "e", `{"pool":"1","source":"https://[::a9fe:a9fe]/"}`, 400, "invalid_source", "source"},
		{"a source on an IPv4-compatible address of loopback", "e", `{"pool":"1","source":"https://[::7f00:1]/"}`, 400, "invalid_source", "source"},
		{"a source on a site-local address", "e", `{"pool":"1","source":"https://[fec0::1]/"}`, 400, "invalid_source", "source"},
		{"a source on loopback as 127.1", "e", `{"pool":"1","source":"https://127.1/"}`, 400, "invalid_source", "source"},
		{"a source on loopback as one decimal number", "e", `{"pool":"1","source":"https://2130706433/"}`, 400, "invalid_source", "source"},
		{"a source on loopback as one hexadecimal number", "e", `{"pool":"1","source":"https://0x7f000001/"}`, 400, "invalid_source", "source"},
		{"a source on loopback with an octal first part", "e", `{"pool":"1","source":"https://0177.0.0.1/"}`, 400, "invalid_source", "source"},
		{"a deadline that is not a duration", "e", `{"pool":"1",` + usage + `,"deadline":"soon"}`, 400, "invalid_deadline", "deadline"},
		{"a negative deadline", "e", `{"pool":"1",` + usage + `,"deadline":"-5s"}`, 400, "invalid_deadline", "deadline"},
		{"a body over KEEPER_MAX_BODY_BYTES", "e", big, 413, "body_too_large", "usage"},
	}
	for _, row := range rows {
		t.Run(row.name, func(t *testing.T) {
			rec := f.compute(t, row.id, row.body)
			require.Equal(t, row.status, rec.Code, rec.Body.String())
			e := apitest.Decode[apitest.Problem](t, rec)
			assert.Equal(t, row.code, e.Code)
			assert.Equal(t, row.field, e.Field)
			assert.NotEmpty(t, e.Message)
		})
	}
	_, err := f.st.GetEpoch(context.Background(), "e")
	assert.ErrorIs(t, err, store.ErrNotFound, "nothing was stored")
	assert.Empty(t, started(f.temporal))
}

func TestAPoolOfExactly2To127IsAccepted(t *testing.T) {
	f := newFixture(t, 64)
	rec := f.compute(t, "max", `{"pool":"170141183460469231731687303715884105728","usage":[{"account":"a","units":"18446744073709551615"}]}`)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
}

func TestGetEpochAnswers404ForAnUnknownEpochAnd405ForOtherMethods(t *testing.T) {
	f := newFixture(t, 64)
	rec := f.do(t, "GET", "/rewarder/epochs/nope", "")
	require.Equal(t, http.StatusNotFound, rec.Code)
	assert.Equal(t, "not_found", apitest.Decode[apitest.Problem](t, rec).Code)
	rec = f.do(t, "DELETE", "/rewarder/epochs/nope", "")
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
	rec = f.do(t, "GET", "/rewarder/epochs/nope/compute", "")
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "POST", rec.Header().Get("Allow"))
}

func TestTheBuiltInLedgerIsServedUnderLedgerV1(t *testing.T) {
	f := newFixture(t, 64)
	srv := httptest.NewServer(f.h)
	t.Cleanup(srv.Close)
	c := &settlement.Client{BaseURL: srv.URL, HTTP: srv.Client()}
	_, replayed, err := c.Submit(context.Background(), "epoch-e-a", settlement.Intent{Epoch: "e", Account: "a", Amount: "5"})
	require.NoError(t, err)
	assert.False(t, replayed)
	rec := f.do(t, "GET", "/ledger/v1/epochs/e/intents", "")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Contains(t, rec.Body.String(), `"idempotency_key":"epoch-e-a"`)
}
