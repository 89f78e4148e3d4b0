package testsuite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/rewards"
	"github.com/keeperhq/keeper/internal/settlement"
	"github.com/keeperhq/keeper/receipt"
)

// epochManifest is the part of GET /rewarder/epochs/{id} the tests read.
type epochManifest struct {
	Status     string `json:"status"`
	Reason     string `json:"reason"`
	Pool       string `json:"pool"`
	TotalPaid  string `json:"total_paid"`
	Accounts   int    `json:"accounts"`
	Commitment string `json:"commitment"`
	Intents    struct {
		Total, Emitted, Acknowledged int
	} `json:"intents"`
	Anchor *struct {
		EvidenceID string           `json:"evidence_id"`
		Status     string           `json:"status"`
		Receipt    *receipt.Receipt `json:"receipt"`
	} `json:"anchor"`
}

// usageBody is a compute request for n accounts with varied units.
func usageBody(pool string, n int) string {
	usage := make([]rewards.Usage, n)
	for i := range usage {
		usage[i] = rewards.Usage{Account: fmt.Sprintf("acct-%05d", i), Units: fmt.Sprint(i%13 + 1)}
	}
	b, _ := json.Marshal(map[string]any{"pool": pool, "usage": usage})
	return string(b)
}

func computeEpoch(hc *http.Client, apiAddr, id, body string) (int, http.Header, string, error) {
	resp, err := hc.Post("http://"+apiAddr+"/rewarder/epochs/"+id+"/compute", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, nil, "", err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(raw), err
}

func getEpoch(t testing.TB, apiAddr, id string) epochManifest {
	t.Helper()
	resp, err := http.Get("http://" + apiAddr + "/rewarder/epochs/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(raw))
	var m epochManifest
	require.NoError(t, json.Unmarshal(raw, &m))
	return m
}

// waitEpoch polls the manifest until done says so.
func waitEpoch(t testing.TB, apiAddr, id string, done func(epochManifest) bool) epochManifest {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		m := getEpoch(t, apiAddr, id)
		if done(m) {
			return m
		}
		if time.Now().After(deadline) {
			require.FailNow(t, "timed out waiting for epoch "+id, "last manifest: %+v", m)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func finished(m epochManifest) bool {
	return m.Status == "completed" || m.Status == "quarantined" || m.Status == "failed"
}

// ledgerIntents reads every intent of an epoch from a ledger's API.
func ledgerIntents(t testing.TB, baseURL, epoch string) (map[string]string, int) {
	t.Helper()
	held, replays, after := map[string]string{}, 0, ""
	for {
		resp, err := http.Get(baseURL + "/ledger/v1/epochs/" + epoch + "/intents?limit=1000&after=" + after)
		require.NoError(t, err)
		var page settlement.IntentPage
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&page))
		resp.Body.Close()
		for _, r := range page.Items {
			require.NotContains(t, held, r.Account, "the ledger holds one intent per account")
			require.Equal(t, settlement.Key(epoch, r.Account), r.IdempotencyKey)
			held[r.Account] = r.Amount
		}
		replays += page.Replays
		if page.Next == "" {
			return held, replays
		}
		after = page.Next
	}
}

func sumOf(t testing.TB, amounts map[string]string) string {
	var sum rewards.Amount
	for _, a := range amounts {
		v, err := rewards.ParseAmount(a)
		require.NoError(t, err)
		sum, _ = sum.Add(v)
	}
	return sum.String()
}

func TestAnEpochIsComputedPaidAndItsCommitmentAnchored(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	_, chs := stubChains(cfg)
	node := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, nil, chs)
	hc := &http.Client{Timeout: 10 * time.Second}

	code, hdr, body, err := computeEpoch(hc, node.APIAddr(), "2026-11", usageBody("1000000000000000000000", 200))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code, body)
	assert.Equal(t, "/rewarder/epochs/2026-11", hdr.Get("Location"))

	m := waitEpoch(t, node.APIAddr(), "2026-11", func(m epochManifest) bool {
		return finished(m) && m.Anchor != nil && m.Anchor.Status == "confirmed"
	})
	require.Equal(t, "completed", m.Status, m.Reason)
	assert.Equal(t, "1000000000000000000000", m.TotalPaid)
	assert.Equal(t, 200, m.Accounts)
	assert.Equal(t, 200, m.Intents.Acknowledged)

	held, _ := ledgerIntents(t, "http://"+node.APIAddr(), "2026-11")
	assert.Len(t, held, 200)
	assert.Equal(t, m.Pool, sumOf(t, held), "the ledger holds the whole pool, no more")

	// The commitment is anchored through intake like any evidence: its receipt proves it.
	require.NotNil(t, m.Anchor.Receipt)
	assert.Equal(t, m.Commitment, m.Anchor.Receipt.Digest)
	require.NoError(t, m.Anchor.Receipt.CheckProof(m.Anchor.Receipt.Anchors[0]))

	// The same request again answers the finished manifest.
	code, _, body, err = computeEpoch(hc, node.APIAddr(), "2026-11", usageBody("1000000000000000000000", 200))
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, code, body)
}

func TestAQuarantinedEpochEmitsNoIntentsAndIsCounted(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	_, chs := stubChains(cfg)
	node := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, nil, chs)
	source := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `[{"account":"alice","units":"3"},{"account":"alice","units":"4"}]`)
	}))
	t.Cleanup(source.Close)

	code, _, body, err := computeEpoch(http.DefaultClient, node.APIAddr(), "dup", `{"pool":"100","source":"`+source.URL+`"}`)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code, body)
	m := waitEpoch(t, node.APIAddr(), "dup", finished)
	assert.Equal(t, "quarantined", m.Status)
	assert.Contains(t, m.Reason, "duplicate account alice")
	assert.Zero(t, m.Intents.Emitted)
	assert.Nil(t, m.Anchor)
	held, _ := ledgerIntents(t, "http://"+node.APIAddr(), "dup")
	assert.Empty(t, held)

	resp, err := http.Get("http://" + node.APIAddr() + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(metrics), "keeper_epochs_quarantined 1")
}

func TestTwentyConcurrentComputeRequestsMakeOneWorkflowRun(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	_, chs := stubChains(cfg)
	node := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, nil, chs)
	hc := &http.Client{Timeout: 10 * time.Second}
	body := usageBody("5000", 50)

	var wg sync.WaitGroup
	codes := make([]int, 20)
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, _, raw, err := computeEpoch(hc, node.APIAddr(), "dedup", body)
			assert.NoError(t, err)
			assert.Contains(t, []int{http.StatusAccepted, http.StatusOK}, code, raw)
			codes[i] = code
		}()
	}
	wg.Wait()
	m := waitEpoch(t, node.APIAddr(), "dedup", finished)
	require.Equal(t, "completed", m.Status, m.Reason)

	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace(), Logger: nopLogger{}})
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool {
		res, err := c.CountWorkflow(context.Background(), &workflowservice.CountWorkflowExecutionsRequest{
			Namespace: srv.Namespace(), Query: "WorkflowId = 'epoch-dedup'",
		})
		return err == nil && res.GetCount() == 1
	}, 30*time.Second, 100*time.Millisecond, "one workflow run for twenty requests")

	code, _, raw, err := computeEpoch(hc, node.APIAddr(), "dedup", usageBody("5001", 50))
	require.NoError(t, err)
	assert.Equal(t, http.StatusConflict, code, raw)
	assert.Contains(t, raw, `"code": "epoch_conflict"`)
}

func TestTheThirdConcurrentEpochIsRefusedWhileTwoAreInFlight(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	cfg.Epochs.MaxInFlight = 2
	_, chs := stubChains(cfg)
	node := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, nil, chs)
	release := make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) })
	// An accounting service that holds its answer until the test lets it go.
	source := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		fmt.Fprint(w, `[{"account":"a","units":"1"},{"account":"b","units":"2"}]`)
	}))
	t.Cleanup(source.Close)
	cfg.Epochs.UpstreamTimeout = time.Minute
	bodyFor := func(n int) string { return fmt.Sprintf(`{"pool":"%d","source":"%s"}`, 300+n, source.URL) }

	for i := 1; i <= 2; i++ {
		code, _, raw, err := computeEpoch(http.DefaultClient, node.APIAddr(), fmt.Sprint("busy-", i), bodyFor(i))
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, code, raw)
	}
	code, hdr, raw, err := computeEpoch(http.DefaultClient, node.APIAddr(), "busy-3", bodyFor(3))
	require.NoError(t, err)
	require.Equal(t, http.StatusTooManyRequests, code, raw)
	assert.NotEmpty(t, hdr.Get("Retry-After"))

	resp, err := http.Get("http://" + node.APIAddr() + "/metrics")
	require.NoError(t, err)
	metrics, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Contains(t, string(metrics), `keeper_busy_rejections_total{endpoint="compute"} 1`)
	assert.Contains(t, string(metrics), `keeper_queue_depth{queue="epochs"} 2`)

	releaseOnce.Do(func() { close(release) })
	for i := 1; i <= 2; i++ {
		assert.Equal(t, "completed", waitEpoch(t, node.APIAddr(), fmt.Sprint("busy-", i), finished).Status)
	}
	code, _, raw, err = computeEpoch(http.DefaultClient, node.APIAddr(), "busy-3", bodyFor(3))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code, raw, "once the first two finish there is room")
	assert.Equal(t, "completed", waitEpoch(t, node.APIAddr(), "busy-3", finished).Status)
}

// crashableLedger is the built-in ledger behind an HTTP server that tells
// workers apart by path prefix (/w1, /w2), so a "crashed" worker's requests
// can be made to hang like a dead process's would.
type crashableLedger struct {
	inner   http.Handler
	served  atomic.Int64
	crashAt int64
	crashed chan struct{}
	once    sync.Once
	closing chan struct{} // the test is over: let hung requests go
}

func (l *crashableLedger) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	worker, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	select {
	case <-l.crashed:
		if worker == "w1" { // the dead worker's requests never get an answer
			select {
			case <-r.Context().Done():
			case <-l.closing:
			}
			return
		}
	default:
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path = "/" + rest
	if r.Method == http.MethodPost && l.served.Add(1) == l.crashAt {
		l.once.Do(func() { close(l.crashed) })
	}
	l.inner.ServeHTTP(w, r2)
}

func TestAWorkerKilledDuringEmitIntentsLeavesEachIntentInTheLedgerOnce(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	cfg.Epochs.Heartbeat = time.Second
	st := openStore(t, dir)
	_, chs := stubChains(cfg)
	led := &crashableLedger{inner: (&settlement.Server{Store: st}).Handler(), crashAt: 1200, crashed: make(chan struct{}), closing: make(chan struct{})}
	ledgerSrv := httptest.NewServer(led)
	t.Cleanup(ledgerSrv.Close)
	t.Cleanup(func() { close(led.closing) }) // runs first

	api := startNode(t, srv, cfg, node.Roles{API: true}, st, chs)
	w1cfg := cfg
	w1cfg.Epochs.LedgerURL = ledgerSrv.URL + "/w1"
	w1 := startNode(t, srv, w1cfg, node.Roles{Worker: true}, st, chs)

	const accounts = 3000
	body := usageBody("987654321987654321", accounts)
	code, _, raw, err := computeEpoch(http.DefaultClient, api.APIAddr(), "crash", body)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code, raw)

	<-led.crashed // mid-way through EmitIntents
	before := getEpoch(t, api.APIAddr(), "crash")
	require.Less(t, before.Intents.Acknowledged, accounts, "the crash happens while intents are going out")
	w1.Kill()
	w2cfg := cfg
	w2cfg.Epochs.LedgerURL = ledgerSrv.URL + "/w2"
	startNode(t, srv, w2cfg, node.Roles{Worker: true}, st, chs)

	m := waitEpoch(t, api.APIAddr(), "crash", finished)
	require.Equal(t, "completed", m.Status, m.Reason)
	assert.Equal(t, accounts, m.Intents.Acknowledged)

	held, replays := ledgerIntents(t, ledgerSrv.URL+"/w2", "crash")
	require.Len(t, held, accounts, "every account has its intent")
	assert.Equal(t, "987654321987654321", sumOf(t, held), "and none is booked twice: the ledger holds the pool exactly")

	// The amounts are the split of the sealed inputs.
	var req struct {
		Usage []rewards.Usage `json:"usage"`
	}
	require.NoError(t, json.NewDecoder(bytes.NewReader([]byte(body))).Decode(&req))
	pool, _ := rewards.ParseAmount("987654321987654321")
	sealed, err := rewards.Seal(pool, req.Usage)
	require.NoError(t, err)
	in, err := rewards.ParseSealed(sealed)
	require.NoError(t, err)
	split, err := rewards.Compute(in)
	require.NoError(t, err)
	for i, e := range in.Entries {
		require.Equal(t, split.Payouts[i].String(), held[e.Account], e.Account)
	}
	t.Logf("killed the worker after %d intents were served; the new worker resent %d the ledger already held (%d requests in all)",
		led.crashAt, replays, led.served.Load())
}

func TestAnEpochThatMissesItsDeadlineFailsAndRunsAgainWhenAskedAgain(t *testing.T) {
	endToEnd(t)
	dir := tempDir(t)
	srv := startServer(t, dir)
	cfg := testConfig(dir)
	cfg.Epochs.UpstreamTimeout = time.Minute
	_, chs := stubChains(cfg)
	node := startNode(t, srv, cfg, node.Roles{API: true, Worker: true}, nil, chs)
	var hang atomic.Bool
	hang.Store(true)
	closing := make(chan struct{})
	source := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if hang.Load() { // an accounting service that never answers
			select {
			case <-r.Context().Done():
			case <-closing:
			}
			return
		}
		fmt.Fprint(w, `[{"account":"a","units":"1"},{"account":"b","units":"3"}]`)
	}))
	t.Cleanup(source.Close)
	t.Cleanup(func() { close(closing) })
	body := `{"pool":"400","source":"` + source.URL + `","deadline":"2s"}`

	code, _, raw, err := computeEpoch(http.DefaultClient, node.APIAddr(), "slow", body)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code, raw)
	m := waitEpoch(t, node.APIAddr(), "slow", finished)
	assert.Equal(t, "failed", m.Status)
	assert.Equal(t, "deadline exceeded", m.Reason)

	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddr(), Namespace: srv.Namespace(), Logger: nopLogger{}})
	require.NoError(t, err)
	defer c.Close()
	require.Eventually(t, func() bool {
		d, err := c.DescribeWorkflowExecution(context.Background(), "epoch-slow", "")
		return err == nil && d.GetWorkflowExecutionInfo().GetStatus().String() == "TimedOut"
	}, 30*time.Second, 100*time.Millisecond, "Temporal timed the workflow out at the epoch's deadline")

	// The same request again, once the service answers, runs the epoch again.
	hang.Store(false)
	code, _, raw, err = computeEpoch(http.DefaultClient, node.APIAddr(), "slow", body)
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, code, raw)
	m = waitEpoch(t, node.APIAddr(), "slow", finished)
	require.Equal(t, "completed", m.Status, m.Reason)
	assert.Equal(t, "400", m.TotalPaid)
}
