package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"

	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/urlpolicy"
	"github.com/keeperhq/keeper/internal/webhook"
	"github.com/keeperhq/keeper/internal/webhooksign"
	"github.com/keeperhq/keeper/internal/workflows"
)

// receiver is a webhook endpoint that answers 500 to the first failFirst
// posts of each webhook-id, then 204, and keeps every post it got.
type receiver struct {
	failFirst int
	answer    func(w http.ResponseWriter, r *http.Request) // when set, answers every post

	mu    sync.Mutex
	posts []post
	tries map[string]int
	got   map[string]int // 2xx answers per webhook-id
}

type post struct {
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	id := req.Header.Get(webhooksign.HeaderID)
	r.posts = append(r.posts, post{Headers: map[string]string{
		webhooksign.HeaderID:        id,
		webhooksign.HeaderTimestamp: req.Header.Get(webhooksign.HeaderTimestamp),
		webhooksign.HeaderSignature: req.Header.Get(webhooksign.HeaderSignature),
	}, Body: string(body)})
	if r.answer != nil {
		r.answer(w, req)
		return
	}
	r.tries[id]++
	if r.tries[id] <= r.failFirst {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	r.got[id]++
	w.WriteHeader(http.StatusNoContent)
}

type webhookFixture struct {
	st   *store.Store
	acts *webhook.Activities
	recv *receiver
	srv  *httptest.Server
	logs *bytes.Buffer
}

func newWebhookFixture(t *testing.T, failFirst int) *webhookFixture {
	t.Helper()
	st := storetest.SQLite(t)
	recv := &receiver{failFirst: failFirst, tries: map[string]int{}, got: map[string]int{}}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	logs := &bytes.Buffer{}
	// The receiver is on loopback: allowed here as KEEPER_WEBHOOK_ALLOW_PRIVATE would.
	client := urlpolicy.Policy{AllowPrivate: true}.Client(http.DefaultTransport.(*http.Transport).Clone())
	acts := &webhook.Activities{Store: st, Client: client, Logger: slog.New(slog.NewTextHandler(logs, nil)), Metrics: webhook.NewMetrics()}
	return &webhookFixture{st: st, acts: acts, recv: recv, srv: srv, logs: logs}
}

// confirmEvidence takes in n evidence and confirms them in one batch.
func (f *webhookFixture) confirmEvidence(t *testing.T, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		_, _, err := f.st.InsertEvidence(ctx, store.NewEvidence{Digest: [32]byte{byte(i), 1}, Chains: []string{"stub"}, Priority: 5})
		require.NoError(t, err)
	}
	b, ok, err := f.st.FormBatch(ctx, "stub", n)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, f.st.MarkSubmitted(ctx, b.ID, [32]byte{9}, "0xref"))
	require.NoError(t, f.st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: "0xref", Block: 1}))
}

// deliverAll runs DeliverWebhook, in Temporal's test environment, for every
// recorded delivery, and returns their ids.
func (f *webhookFixture) deliverAll(t *testing.T, p workflows.WebhookPolicy) []string {
	t.Helper()
	ds, err := f.st.UnstartedDeliveries(context.Background(), 100)
	require.NoError(t, err)
	var ids []string
	for _, d := range ds {
		var s testsuite.WorkflowTestSuite
		env := s.NewTestWorkflowEnvironment()
		webhook.RegisterActivities(env, f.acts)
		env.ExecuteWorkflow(workflows.DeliverWebhook, workflows.WebhookInput{Delivery: workflows.DeliveryRef{DeliveryID: d.ID, Run: d.Run}, Policy: p})
		require.True(t, env.IsWorkflowCompleted())
		require.NoError(t, env.GetWorkflowError())
		ids = append(ids, d.ID)
	}
	return ids
}

var fastRetries = workflows.WebhookPolicy{RetryFor: time.Minute, RetryBase: 10 * time.Millisecond, RetryCap: 40 * time.Millisecond}

func TestAReceiverThatFailsItsFirstFiveDeliveriesGetsEachEventOncePerID(t *testing.T) {
	f := newWebhookFixture(t, 5)
	w, err := f.st.CreateWebhook(context.Background(), f.srv.URL+"/hook?token=abc", []string{store.EventEvidenceConfirmed})
	require.NoError(t, err)
	f.confirmEvidence(t, 3)

	ids := f.deliverAll(t, fastRetries)
	require.Len(t, ids, 3)
	for _, id := range ids {
		assert.Equal(t, 1, f.recv.got[id], "delivery %s succeeds once", id)
		assert.Equal(t, 6, f.recv.tries[id], "five failures, then the success")
		d, err := f.st.GetDelivery(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, store.DeliveryDelivered, d.Status)
		assert.Equal(t, 6, d.Attempts)
	}
	// Every attempt of a delivery carries its id and the same body, signed
	// with the webhook's secret, and no secret.
	bodies := map[string]string{}
	for _, p := range f.recv.posts {
		id := p.Headers[webhooksign.HeaderID]
		if prev, ok := bodies[id]; ok {
			assert.Equal(t, prev, p.Body)
		}
		bodies[id] = p.Body
		assert.NotContains(t, p.Body, "whsec_")
		var body struct {
			Type string
			Data struct{ ID, Status string }
		}
		require.NoError(t, json.Unmarshal([]byte(p.Body), &body))
		assert.Equal(t, store.EventEvidenceConfirmed, body.Type)
	}
	// The body is the one openapi.json describes.
	doc, err := openapitest.Description()
	require.NoError(t, err)
	schema := doc.Components.Schemas["WebhookEventBody"]
	require.NotNil(t, schema)
	for _, p := range f.recv.posts {
		var v any
		require.NoError(t, json.Unmarshal([]byte(p.Body), &v))
		assert.NoError(t, schema.Value.VisitJSON(v), p.Body)
	}
	verifyWithStandardWebhooks(t, w.Secret, f.recv.posts)
	assert.NotContains(t, f.logs.String(), "token=abc")
}

// verifyWithStandardWebhooks checks every post's signature with the npm
// package standardwebhooks, run by node. It fails under CI=true when node
// or the package is missing and skips otherwise.
func verifyWithStandardWebhooks(t *testing.T, secret string, posts []post) {
	t.Helper()
	var checks []swCheck
	for _, p := range posts {
		checks = append(checks, swCheck{secret, p.Headers, p.Body})
	}
	// A tampered body must not verify: the check can fail.
	tampered := posts[0]
	checks = append(checks, swCheck{secret, tampered.Headers, tampered.Body + " "})
	res := standardWebhooks(t, checks)
	for i, r := range res[:len(res)-1] {
		assert.True(t, r.OK, "post %d (%s): %s", i, posts[i].Headers[webhooksign.HeaderID], r.Error)
	}
	assert.False(t, res[len(res)-1].OK, "a tampered body verifies")
}

// swCheck is one verification by the npm package standardwebhooks.
type swCheck struct {
	Secret  string            `json:"secret"`
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
}

type swResult struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
}

// standardWebhooks runs checks through the npm package standardwebhooks,
// run by node, and returns their results in order. It fails under CI=true
// when node or the package is missing and skips otherwise.
func standardWebhooks(t *testing.T, checks []swCheck) []swResult {
	t.Helper()
	const install = "npm install --prefix .tools/npm --save-exact standardwebhooks@1.1.1 (from the repository root; .ci/run does it)"
	missing := func(why string) {
		t.Helper()
		if os.Getenv("CI") == "true" {
			t.Fatal("the Standard Webhooks check needs " + why + "; " + install)
		}
		t.Skip("the Standard Webhooks check needs " + why + "; " + install)
	}
	node, err := osexec.LookPath("node")
	if err != nil {
		missing("node on PATH")
	}
	prefix := os.Getenv("KEEPER_NPM_PREFIX")
	if prefix == "" {
		prefix, err = filepath.Abs(filepath.Join("..", "..", ".tools", "npm"))
		require.NoError(t, err)
	}
	modules := filepath.Join(prefix, "node_modules")
	if _, err := os.Stat(filepath.Join(modules, "standardwebhooks", "package.json")); err != nil {
		missing("the npm package standardwebhooks in " + modules)
	}
	in, err := json.Marshal(checks)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := osexec.CommandContext(ctx, node, filepath.Join("testdata", "standardwebhooks_verify.js"))
	cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
	cmd.Stdin = bytes.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "standardwebhooks_verify.js: %s", stderr.String())
	var res []swResult
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "printed %q", stdout.String())
	require.Len(t, res, len(checks))
	return res
}

func TestAfterARotationDeliveriesVerifyWithTheOldAndTheNewSecretUntilTheGraceEnds(t *testing.T) {
	f := newWebhookFixture(t, 0)
	ctx := context.Background()
	first, err := f.st.CreateWebhook(ctx, f.srv.URL, []string{store.EventEvidenceConfirmed})
	require.NoError(t, err)
	second, err := f.st.RotateWebhookSecret(ctx, first.ID, time.Hour)
	require.NoError(t, err)
	f.confirmEvidence(t, 2)
	f.deliverAll(t, fastRetries)
	during := append([]post(nil), f.recv.posts...)
	require.Len(t, during, 2)
	for _, p := range during {
		assert.Len(t, strings.Fields(p.Headers[webhooksign.HeaderSignature]), 2, "v1,<new> v1,<old>")
	}
	verifyWithStandardWebhooks(t, second.Secret, during)
	verifyWithStandardWebhooks(t, first.Secret, during)

	// A rotation whose grace has passed: only the newest secret verifies.
	third, err := f.st.RotateWebhookSecret(ctx, first.ID, 50*time.Millisecond)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return time.Now().After(third.PreviousSecretUntil) }, 10*time.Second, time.Millisecond, "the grace ends")
	_, _, err = f.st.InsertEvidence(ctx, store.NewEvidence{Digest: [32]byte{7, 7}, Chains: []string{"stub"}, Priority: 5})
	require.NoError(t, err)
	b, ok, err := f.st.FormBatch(ctx, "stub", 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, f.st.MarkSubmitted(ctx, b.ID, [32]byte{8}, "0xref2"))
	require.NoError(t, f.st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: "0xref2", Block: 2}))
	f.deliverAll(t, fastRetries)
	after := f.recv.posts[len(during):]
	require.Len(t, after, 1)
	assert.Len(t, strings.Fields(after[0].Headers[webhooksign.HeaderSignature]), 1, "one signature once the grace is over")
	verifyWithStandardWebhooks(t, third.Secret, after)
	res := standardWebhooks(t, []swCheck{
		{second.Secret, after[0].Headers, after[0].Body},
		{first.Secret, after[0].Headers, after[0].Body},
	})
	assert.False(t, res[0].OK, "the secret rotated out no longer verifies after its grace")
	assert.False(t, res[1].OK, "nor the one before it")

	for _, secret := range []string{first.Secret, second.Secret, third.Secret} {
		assert.NotContains(t, f.logs.String(), secret, "no secret is logged")
	}
}

func TestRedirectsLargeOrSlowAnswersAndRefusedAddressesAreFailedAttempts(t *testing.T) {
	big := bytes.Repeat([]byte("x"), webhook.MaxAnswer+1)
	cases := []struct {
		name    string
		answer  func(w http.ResponseWriter, r *http.Request)
		private bool // AllowPrivate of the client's policy
		error   string
	}{
		{"a redirect", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Location", "https://elsewhere.example/")
			w.WriteHeader(http.StatusFound)
		}, true, "answered 302; redirects are not followed"},
		{"an answer over 64 KiB", func(w http.ResponseWriter, _ *http.Request) { w.Write(big) }, true, "answer larger than 65536 bytes"},
		{"a slow answer", func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, true, "no answer within 100ms"},
		{"a loopback endpoint without KEEPER_WEBHOOK_ALLOW_PRIVATE", func(w http.ResponseWriter, _ *http.Request) {}, false, "refused by keeper's outbound URL policy"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newWebhookFixture(t, 0)
			f.recv.answer = c.answer
			f.acts.Timeout = 100 * time.Millisecond
			f.acts.Client = urlpolicy.Policy{AllowPrivate: c.private}.Client(http.DefaultTransport.(*http.Transport).Clone())
			_, err := f.st.CreateWebhook(context.Background(), f.srv.URL, []string{store.EventEvidenceConfirmed})
			require.NoError(t, err)
			f.confirmEvidence(t, 1)

			ids := f.deliverAll(t, workflows.WebhookPolicy{RetryFor: 300 * time.Millisecond, RetryBase: 50 * time.Millisecond, RetryCap: 50 * time.Millisecond})
			require.Len(t, ids, 1)
			d, err := f.st.GetDelivery(context.Background(), ids[0])
			require.NoError(t, err)
			assert.Equal(t, store.DeliveryFailed, d.Status)
			assert.Contains(t, d.LastError, "retries used up")
			assert.Contains(t, d.LastError, c.error)
			assert.NotContains(t, d.LastError, "xxxx", "the answer's body is never kept")
			if !c.private {
				assert.Empty(t, f.recv.posts, "nothing reached the refused address")
			}
		})
	}
}

func TestAWebhookFailingLongerThanDisableAfterIsDisabledAndItsDeliveriesFailUntilReDriven(t *testing.T) {
	f := newWebhookFixture(t, 1000)
	f.acts.DisableAfter = time.Nanosecond
	ctx := context.Background()
	w, err := f.st.CreateWebhook(ctx, f.srv.URL, []string{store.EventEvidenceConfirmed})
	require.NoError(t, err)
	f.confirmEvidence(t, 2)

	ids := f.deliverAll(t, fastRetries)
	require.Len(t, ids, 2)
	got, err := f.st.GetWebhook(ctx, w.ID)
	require.NoError(t, err)
	assert.True(t, got.Disabled)
	assert.Contains(t, f.logs.String(), "webhook disabled")
	assert.Contains(t, f.logs.String(), w.ID)
	assert.Equal(t, 1, len(f.recv.posts), "after the first failure disabled it, the second delivery was not attempted")
	for _, id := range ids {
		d, err := f.st.GetDelivery(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, store.DeliveryFailed, d.Status)
	}

	// The endpoint is back: a re-drive enables the webhook and delivers.
	f.recv.failFirst = 0
	f.acts.DisableAfter = 0
	_, err = f.st.RetryDelivery(ctx, w.ID, ids[0])
	require.NoError(t, err)
	again := f.deliverAll(t, fastRetries)
	assert.Equal(t, ids[:1], again)
	d, err := f.st.GetDelivery(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, store.DeliveryDelivered, d.Status)
	assert.Equal(t, 1, f.recv.got[ids[0]])
	assert.Equal(t, ids[0], f.recv.posts[len(f.recv.posts)-1].Headers[webhooksign.HeaderID], "a re-drive keeps the delivery's id")
}

func TestA410AnswerDisablesTheWebhookAtOnceAndFailsItsDeliveriesWithoutRetry(t *testing.T) {
	f := newWebhookFixture(t, 0)
	f.recv.answer = func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusGone) }
	ctx := context.Background()
	w, err := f.st.CreateWebhook(ctx, f.srv.URL, []string{store.EventEvidenceConfirmed})
	require.NoError(t, err)
	f.confirmEvidence(t, 2)

	ids := f.deliverAll(t, fastRetries)
	require.Len(t, ids, 2)
	assert.Len(t, f.recv.posts, 1, "one post: the 410 disabled the webhook, so no retry and no second delivery")
	got, err := f.st.GetWebhook(ctx, w.ID)
	require.NoError(t, err)
	assert.True(t, got.Disabled)
	assert.Equal(t, store.GoneReason, got.DisabledReason)
	for _, id := range ids {
		d, err := f.st.GetDelivery(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, store.DeliveryFailed, d.Status)
	}
	first, err := f.st.GetDelivery(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, 1, first.Attempts)
	assert.Equal(t, http.StatusGone, first.LastStatus)
	assert.Contains(t, first.LastError, "410 Gone")
	assert.Contains(t, f.logs.String(), "410 Gone")
	assert.Equal(t, 1.0, counter(f.acts.Metrics.Disabled.WithLabelValues("gone")))

	// Enabled again by the explicit call, it takes deliveries again.
	f.recv.answer = nil
	_, err = f.st.EnableWebhook(ctx, w.ID)
	require.NoError(t, err)
	_, err = f.st.RetryDelivery(ctx, w.ID, ids[1])
	require.NoError(t, err)
	f.deliverAll(t, fastRetries)
	d, err := f.st.GetDelivery(ctx, ids[1])
	require.NoError(t, err)
	assert.Equal(t, store.DeliveryDelivered, d.Status)
}

// sendOnce runs one SendWebhook attempt of the fixture's only delivery and
// returns the wait it asks Temporal for before the next attempt.
func (f *webhookFixture) sendOnce(t *testing.T, sched workflows.WebhookSchedule) (time.Duration, store.Delivery) {
	t.Helper()
	ds, err := f.st.UnstartedDeliveries(context.Background(), 1)
	require.NoError(t, err)
	require.Len(t, ds, 1)
	var s testsuite.WorkflowTestSuite
	env := s.NewTestActivityEnvironment()
	env.RegisterActivity(f.acts)
	_, err = env.ExecuteActivity(f.acts.SendWebhook, workflows.DeliveryRef{DeliveryID: ds[0].ID, Run: ds[0].Run}, sched)
	require.Error(t, err)
	var app *temporal.ApplicationError
	require.ErrorAs(t, err, &app)
	d, err := f.st.GetDelivery(context.Background(), ds[0].ID)
	require.NoError(t, err)
	return app.NextRetryDelay(), d
}

func TestARetryAfterOnA429Or503SetsTheNextAttemptWithinTheCap(t *testing.T) {
	sched := workflows.WebhookSchedule{Base: 5 * time.Second, Cap: time.Hour}
	seconds := func(s string) func(time.Time) string { return func(time.Time) string { return s } }
	cases := []struct {
		name   string
		status int
		after  func(now time.Time) string // the Retry-After of an answer sent at now
		want   time.Duration
	}{
		{"503 with seconds", http.StatusServiceUnavailable, seconds("120"), 2 * time.Minute},
		{"429 with an HTTP date", http.StatusTooManyRequests, func(now time.Time) string { return now.Add(10 * time.Minute).UTC().Format(http.TimeFormat) }, 10 * time.Minute},
		{"503 asking for three days gets the cap", http.StatusServiceUnavailable, seconds("259200"), time.Hour},
		{"429 asking for no wait gets the base", http.StatusTooManyRequests, seconds("0"), 5 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newWebhookFixture(t, 0)
			var asked atomic.Value // the Retry-After sent
			f.recv.answer = func(w http.ResponseWriter, _ *http.Request) {
				after := c.after(time.Now())
				asked.Store(after)
				w.Header().Set("Retry-After", after)
				w.WriteHeader(c.status)
			}
			_, err := f.st.CreateWebhook(context.Background(), f.srv.URL, []string{store.EventEvidenceConfirmed})
			require.NoError(t, err)
			f.confirmEvidence(t, 1)
			wait, d := f.sendOnce(t, sched)
			// An HTTP date counts whole seconds: up to one is lost to it.
			assert.InDelta(t, c.want.Seconds(), wait.Seconds(), 1, "asked %q, waits %s", asked.Load(), wait)
			assert.Contains(t, d.LastError, "with Retry-After")
			assert.Equal(t, store.DeliveryPending, d.Status)
		})
	}
}

func TestWithoutRetryAfterTheWaitIsTheBackoffLessUpToAFifthOfJitter(t *testing.T) {
	sched := workflows.WebhookSchedule{Base: 10 * time.Second, Cap: time.Hour}
	seen := map[time.Duration]bool{}
	f := newWebhookFixture(t, 1000)
	_, err := f.st.CreateWebhook(context.Background(), f.srv.URL, []string{store.EventEvidenceConfirmed})
	require.NoError(t, err)
	f.confirmEvidence(t, 1)
	for range 5 {
		// A 503 without Retry-After, or a 500, follows the schedule.
		wait, d := f.sendOnce(t, sched)
		assert.LessOrEqual(t, wait, 10*time.Second)
		assert.Greater(t, wait, 8*time.Second)
		assert.Equal(t, "answered 500", d.LastError)
		seen[wait] = true
	}
	assert.Greater(t, len(seen), 1, "the waits are jittered")
}

// counter is c's value.
func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	_ = c.Write(&m)
	return m.GetCounter().GetValue()
}
