package epoch_test

import (
	"context"
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
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/keeperhq/keeper/internal/epoch"
	"github.com/keeperhq/keeper/internal/rewards"
	"github.com/keeperhq/keeper/internal/settlement"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/urlpolicy"
	"github.com/keeperhq/keeper/internal/workflows"
)

type activitiesFixture struct {
	st   *store.Store
	acts *epoch.Activities
	env  *testsuite.TestActivityEnvironment
	dir  string
}

func newActivitiesFixture(t testing.TB) *activitiesFixture {
	t.Helper()
	dir := t.TempDir()
	st := storetest.Open(t, filepath.Join(dir, "keeper.db"))
	acts := &epoch.Activities{
		Store: st, ArtifactDir: filepath.Join(dir, "artifacts"), Chains: []string{"stub"}, CallTimeout: 5 * time.Second,
		Ledger:  &settlement.Client{BaseURL: "http://ledger.test", HTTP: settlement.InProcess((&settlement.Server{Store: st}).Handler())},
		HTTP:    &http.Client{},
		Metrics: epoch.NewUpstreamMetrics(),
	}
	var ts testsuite.WorkflowTestSuite
	env := ts.NewTestActivityEnvironment()
	env.RegisterActivity(acts)
	return &activitiesFixture{st: st, acts: acts, env: env, dir: dir}
}

func (f *activitiesFixture) sourceEpoch(t testing.TB, id, pool string, h http.Handler) workflows.EpochRef {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	_, _, err := f.st.CreateEpoch(context.Background(), store.NewEpoch{
		ID: id, RequestHash: "r-" + id, Pool: pool, Source: srv.URL, Deadline: time.Now().Add(time.Hour),
	}, 64)
	require.NoError(t, err)
	return workflows.EpochRef{EpochID: id, Run: 1}
}

func exec[T any](t testing.TB, env *testsuite.TestActivityEnvironment, fn any, args ...any) T {
	t.Helper()
	v, err := env.ExecuteActivity(fn, args...)
	require.NoError(t, err)
	var out T
	require.NoError(t, v.Get(&out))
	return out
}

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}

func TestTheSameUsageInAnotherOrderSealsToTheSameFile(t *testing.T) {
	f := newActivitiesFixture(t)
	a := f.sourceEpoch(t, "a", "100", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `[{"account":"bob","units":"0020"},{"account":"alice","units":"10"}]`)
	}))
	b := f.sourceEpoch(t, "b", "100", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `[{"account":"alice","units":"10","note":"extra fields are ignored"},{"account":"bob","units":"20"}]`)
	}))
	sa := exec[workflows.SealResult](t, f.env, f.acts.SealInputs, a)
	sb := exec[workflows.SealResult](t, f.env, f.acts.SealInputs, b)
	assert.Equal(t, sa, sb)
	sealed, err := os.ReadFile(filepath.Join(f.acts.ArtifactDir, sa.InputsPath))
	require.NoError(t, err)
	assert.Equal(t, "keeper-rewards-inputs v1\npool 100\nalice 10\nbob 20\n", string(sealed))
	assert.Equal(t, rewards.Hash(sealed), sa.InputsHash)
	e, err := f.st.GetEpoch(context.Background(), "a")
	require.NoError(t, err)
	assert.Equal(t, store.EpochComputing, e.Status)
	assert.Equal(t, 2, e.Accounts)
}

func TestWriteArtifactsRunTwiceWritesIdenticalBytes(t *testing.T) {
	f := newActivitiesFixture(t)
	ref := f.sourceEpoch(t, "twice", "1000003", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `[{"account":"a","units":"3"},{"account":"b","units":"5"},{"account":"c","units":"11"}]`)
	}))
	seal := exec[workflows.SealResult](t, f.env, f.acts.SealInputs, ref)
	payouts := exec[workflows.ComputeResult](t, f.env, f.acts.ComputeRewards, ref, seal)
	first := exec[workflows.ArtifactsResult](t, f.env, f.acts.WriteArtifacts, ref, workflows.ArtifactsInput{Inputs: seal, Payouts: payouts})
	run1, err := os.ReadFile(filepath.Join(f.acts.ArtifactDir, first.RunPath))
	require.NoError(t, err)

	second := exec[workflows.ArtifactsResult](t, f.env, f.acts.WriteArtifacts, ref, workflows.ArtifactsInput{Inputs: seal, Payouts: payouts})
	run2, err := os.ReadFile(filepath.Join(f.acts.ArtifactDir, second.RunPath))
	require.NoError(t, err)
	assert.Equal(t, first, second)
	assert.Equal(t, string(run1), string(run2))
	leftovers, _ := filepath.Glob(filepath.Join(f.acts.ArtifactDir, "epochs", "twice", ".tmp-*"))
	assert.Empty(t, leftovers, "no temporary files are left behind")
}

func TestEmitIntentsRunTwiceBooksEachIntentOnce(t *testing.T) {
	f := newActivitiesFixture(t)
	ref := f.sourceEpoch(t, "once", "10", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `[{"account":"a","units":"1"},{"account":"b","units":"1"},{"account":"z","units":"0"}]`)
	}))
	seal := exec[workflows.SealResult](t, f.env, f.acts.SealInputs, ref)
	payouts := exec[workflows.ComputeResult](t, f.env, f.acts.ComputeRewards, ref, seal)
	assert.Equal(t, 2, payouts.Intents, "an account paid nothing gets no intent")

	first := exec[workflows.IntentsResult](t, f.env, f.acts.EmitIntents, ref, payouts)
	assert.Equal(t, workflows.IntentsResult{Emitted: 2, Acknowledged: 2}, first)
	again := exec[workflows.IntentsResult](t, f.env, f.acts.EmitIntents, ref, payouts)
	assert.Equal(t, workflows.IntentsResult{Emitted: 2, Acknowledged: 2, Replayed: 2}, again, "the ledger answered from its records")

	held, err := f.st.LedgerIntents(context.Background(), "once", "", 10)
	require.NoError(t, err)
	require.Len(t, held, 2)
	assert.Equal(t, "5", held[0].Amount)
	assert.Equal(t, 1, held[0].Replays)
}

func TestASourceThatStallsIsCountedAsATimeoutAndAskedAgain(t *testing.T) {
	f := newActivitiesFixture(t)
	f.acts.CallTimeout = 200 * time.Millisecond
	var calls atomic.Int64
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ref := f.sourceEpoch(t, "stall", "10", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			select { // never answers the first call
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		fmt.Fprint(w, `[{"account":"a","units":"1"}]`)
	}))
	exec[workflows.SealResult](t, f.env, f.acts.SealInputs, ref)
	assert.EqualValues(t, 2, calls.Load())
	assert.Equal(t, 1.0, counter(f.acts.Metrics.Timeouts.WithLabelValues("source")))
	assert.Equal(t, 1.0, counter(f.acts.Metrics.Retries.WithLabelValues("source")))
}

func TestASourceThatKeepsFailingGivesUpAfterThreeAttempts(t *testing.T) {
	f := newActivitiesFixture(t)
	var calls atomic.Int64
	ref := f.sourceEpoch(t, "down", "10", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		http.Error(w, "down", http.StatusBadGateway)
	}))
	_, err := f.env.ExecuteActivity(f.acts.SealInputs, ref)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTP 502")
	assert.EqualValues(t, 3, calls.Load(), "at most 3 attempts per call (docs/retries.md); the activity's retry policy takes over")
}

// A failed fetch reports the status, never the upstream's answer: a source
// that should not have been fetched must not have its body copied into the
// epoch's reason.
func TestAFailedSourceFetchReportsTheStatusNotTheBody(t *testing.T) {
	f := newActivitiesFixture(t)
	ref := f.sourceEpoch(t, "leaky", "10", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "ami-id instance-id iam/security-credentials/secret-role", http.StatusForbidden)
	}))
	_, err := f.env.ExecuteActivity(f.acts.SealInputs, ref)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "HTTP 403 Forbidden")
	assert.NotContains(t, err.Error(), "security-credentials")
}

// With the production outbound policy a source is refused at connect time,
// after DNS, when its name resolves to a private address; nothing is
// fetched and the refusal is permanent.
func TestASourceResolvingToAPrivateAddressIsRefusedAtConnectTime(t *testing.T) {
	f := newActivitiesFixture(t)
	f.acts.HTTP = urlpolicy.Policy{}.Client(http.DefaultTransport.(*http.Transport))
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		fmt.Fprint(w, `[{"account":"a","units":"1"}]`)
	}))
	t.Cleanup(srv.Close)
	source := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	_, _, err := f.st.CreateEpoch(context.Background(), store.NewEpoch{
		ID: "ssrf", RequestHash: "r-ssrf", Pool: "10", Source: source, Deadline: time.Now().Add(time.Hour),
	}, 64)
	require.NoError(t, err)

	_, err = f.env.ExecuteActivity(f.acts.SealInputs, workflows.EpochRef{EpochID: "ssrf", Run: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "outbound URL policy")
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.True(t, appErr.NonRetryable(), "a refused address is not retried")
	assert.Zero(t, calls.Load(), "nothing reached the server")
}

// A source stored before the policy judged IPv6 forms by the IPv4 address
// inside (docs/production.md, URLs keeper fetches for callers) is refused
// when SealInputs connects: the NAT64 address of the metadata service is
// never dialed, and the refusal is permanent.
func TestASourceOnANAT64AddressOfTheMetadataServiceIsRefusedAtConnectTime(t *testing.T) {
	f := newActivitiesFixture(t)
	f.acts.HTTP = urlpolicy.Policy{}.Client(http.DefaultTransport.(*http.Transport))
	_, _, err := f.st.CreateEpoch(context.Background(), store.NewEpoch{
		ID: "nat64", RequestHash: "r-nat64", Pool: "10", Source: "https://[64:ff9b::a9fe:a9fe]/latest/meta-data/", Deadline: time.Now().Add(time.Hour),
	}, 64)
	require.NoError(t, err)

	_, err = f.env.ExecuteActivity(f.acts.SealInputs, workflows.EpochRef{EpochID: "nat64", Run: 1})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "refused by keeper's outbound URL policy: at connect time, 64:ff9b::a9fe:a9fe is a NAT64 address of 169.254.169.254")
	var appErr *temporal.ApplicationError
	require.ErrorAs(t, err, &appErr)
	assert.True(t, appErr.NonRetryable(), "a refused address is not retried")
}
