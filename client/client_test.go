package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	keeper "github.com/keeperhq/keeper/client"
	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/dev/testkit"
	"github.com/keeperhq/keeper/internal/epoch"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/temporalfake"
	"github.com/keeperhq/keeper/internal/webhook"
	"github.com/keeperhq/keeper/merkle"
)

// api is a real keeper API (evidence on the stub chain, wallets on solana,
// epochs), every exchange checked against the OpenAPI description. front,
// when set, answers in front of it.
type api struct {
	st    *store.Store
	url   string
	mu    sync.Mutex
	front func(w http.ResponseWriter, r *http.Request, api http.Handler) bool // true: it answered
	keys  []string                                                            // Idempotency-Key of every POST as sent, in order
}

func newAPI(t *testing.T) *api {
	t.Helper()
	st := storetest.SQLite(t)
	a := &starter.API{Store: st, Logger: slog.New(slog.DiscardHandler),
		Features: []starter.Feature{
			&anchor.HTTP{Store: st, Chains: []string{"stub"}, MaxPending: 100, Logger: slog.New(slog.DiscardHandler)},
			&epoch.HTTP{Store: st, Temporal: &temporalfake.Client{}, Options: epoch.Options{MaxInFlight: 4, Duration: time.Hour}},
			&webhook.HTTP{Store: st, Logger: slog.New(slog.DiscardHandler)},
			&backfill.HTTP{Store: st, Logger: slog.New(slog.DiscardHandler), Networks: []backfill.Network{{Name: "solana", Unit: "signatures",
				Parse: func(s string) (string, error) { return s, nil }}}},
		},
	}
	s := &api{st: st}
	h := openapitest.Handler(t, a.Handler())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		front := s.front
		if r.Method == http.MethodPost {
			s.keys = append(s.keys, r.Header.Get("Idempotency-Key"))
		}
		s.mu.Unlock()
		if front == nil || !front(w, r, h) {
			h.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

func (s *api) setFront(f func(w http.ResponseWriter, r *http.Request, api http.Handler) bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.front = f
}

func (s *api) postKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.keys...)
}

func digest(seed string) string {
	d := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(d[:])
}

func TestSubmitEvidenceAnswersTheStoredEvidenceAndSendsAKeyOnEveryPost(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	ctx := context.Background()
	ev, err := c.SubmitEvidence(ctx, keeper.EvidenceRequest{Digest: digest("a"), Chains: []string{"multi"}, Metadata: []byte(`{"case":"A-17"}`)})
	require.NoError(t, err)
	assert.Regexp(t, `^ev_[0-9a-f]{24}$`, ev.ID)
	assert.Equal(t, keeper.StatusPending, ev.Status)
	assert.Equal(t, []string{"stub"}, ev.Chains)
	assert.Equal(t, 5, ev.Priority)
	assert.JSONEq(t, `{"case":"A-17"}`, string(ev.Metadata))
	require.Len(t, ev.Anchors, 1)
	assert.False(t, ev.CreatedAt.IsZero())

	keys := s.postKeys()
	require.Len(t, keys, 1)
	assert.Regexp(t, `^"[0-9a-f]{32}"$`, keys[0], "a generated key, as the draft's Structured Field string")
	assert.Equal(t, keys[0], `"`+ev.IdempotencyKey+`"`, "the API stored the generated key")

	// Another call without a key is another evidence, even for the same digest.
	other, err := c.SubmitEvidence(ctx, keeper.EvidenceRequest{Content: []byte("test"), Chains: []string{"stub"}, Priority: 1})
	require.NoError(t, err)
	assert.NotEqual(t, ev.ID, other.ID)
	assert.Equal(t, "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", other.Digest)
	assert.NotEqual(t, keys[0], s.postKeys()[1])
}

func TestTheCallersIdempotencyKeyAnswersTheFirstEvidenceAgain(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	req := keeper.EvidenceRequest{Digest: digest("a"), Chains: []string{"stub"}, IdempotencyKey: "upload-7f3a"}
	first, err := c.SubmitEvidence(context.Background(), req)
	require.NoError(t, err)
	again, err := c.SubmitEvidence(context.Background(), req)
	require.NoError(t, err)
	assert.Equal(t, first.ID, again.ID)
	assert.Equal(t, []string{`"upload-7f3a"`, `"upload-7f3a"`}, s.postKeys())

	req.Digest = digest("b")
	_, err = c.SubmitEvidence(context.Background(), req)
	assert.True(t, keeper.IsCode(err, "idempotency_conflict"), "%v", err)
	var e *keeper.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusUnprocessableEntity, e.Status)

	// Only the metadata differs: another request all the same.
	req.Digest, req.Metadata = digest("a"), []byte(`{"case":2}`)
	_, err = c.SubmitEvidence(context.Background(), req)
	assert.True(t, keeper.IsCode(err, "idempotency_conflict"), "%v", err)
}

func TestTheClientSendsItsKeyAsAStructuredFieldStringTheAPIReadsBack(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	ctx := context.Background()
	for _, key := range []string{`say "hi" \ 1`, "plain-key", "café-1"} {
		ev, err := c.SubmitEvidence(ctx, keeper.EvidenceRequest{Digest: digest(key), Chains: []string{"stub"}, IdempotencyKey: key})
		require.NoError(t, err, key)
		assert.Equal(t, key, ev.IdempotencyKey, "the API stored the key itself")
		again, err := c.SubmitEvidence(ctx, keeper.EvidenceRequest{Digest: digest(key), Chains: []string{"stub"}, IdempotencyKey: key})
		require.NoError(t, err, key)
		assert.Equal(t, ev.ID, again.ID)
	}
	assert.Equal(t, []string{
		`"say \"hi\" \\ 1"`, `"say \"hi\" \\ 1"`,
		`"plain-key"`, `"plain-key"`,
		"café-1", "café-1", // an sf-string holds ASCII only: sent bare
	}, s.postKeys())
}

// The API took the POST but its answer was lost (a 503 came back instead):
// the retry carries the same key, so the evidence is stored once.
func TestAPostRetriedAfterALostAnswerStoresOnce(t *testing.T) {
	s := newAPI(t)
	var lost atomic.Bool
	s.setFront(func(w http.ResponseWriter, r *http.Request, api http.Handler) bool {
		if r.Method != http.MethodPost || lost.Swap(true) {
			return false
		}
		api.ServeHTTP(httptest.NewRecorder(), r)
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		return true
	})
	ev, err := keeper.New(s.url).SubmitEvidence(context.Background(), keeper.EvidenceRequest{Digest: digest("once"), Chains: []string{"stub"}})
	require.NoError(t, err)
	keys := s.postKeys()
	require.Len(t, keys, 2)
	assert.Equal(t, keys[0], keys[1], "the retry sent the same Idempotency-Key")
	evs, _, err := s.st.ListEvidence(context.Background(), store.ListFilter{Limit: 10})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	assert.Equal(t, ev.ID, evs[0].ID)
}

// inProcess is an HTTP client whose every request h answers in the calling
// goroutine, so that a synctest bubble's clock runs the retries' waits (the
// API behind newAPI listens on loopback, which a bubble cannot wait on).
func inProcess(h http.HandlerFunc) *http.Client {
	return &http.Client{Transport: testkit.HandlerTransport{Handler: h}}
}

// answer writes an API answer with its JSON body.
func answer(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write([]byte(body))
}

func TestA429IsRetriedAfterItsRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent []time.Time
		c := keeper.New("http://keeper.test")
		c.HTTP = inProcess(func(w http.ResponseWriter, r *http.Request) {
			sent = append(sent, time.Now())
			if len(sent) == 1 {
				w.Header().Set("Retry-After", "1")
				answer(w, http.StatusTooManyRequests, `{"code":"overloaded","message":"wait"}`)
				return
			}
			answer(w, http.StatusAccepted, `{"id":"ev_000000000000000000000000","status":"pending"}`)
		})
		ev, err := c.SubmitEvidence(context.Background(), keeper.EvidenceRequest{Digest: digest("x"), Chains: []string{"stub"}, Priority: 9})
		require.NoError(t, err)
		assert.Equal(t, "ev_000000000000000000000000", ev.ID)
		require.Len(t, sent, 2)
		assert.Equal(t, time.Second, sent[1].Sub(sent[0]), "it waited as Retry-After said")
	})
}

func TestRetriesAreBoundedInNumberAndWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var sent []time.Time
		c := keeper.New("http://keeper.test")
		c.HTTP = inProcess(func(w http.ResponseWriter, r *http.Request) {
			sent = append(sent, time.Now())
			w.Header().Set("Retry-After", "3600")
			answer(w, http.StatusServiceUnavailable, `{"code":"busy","message":"too many concurrent requests on /v1/; retry shortly"}`)
		})
		c.MaxRetries, c.MaxRetryWait = 2, 20*time.Millisecond
		_, err := c.Evidence(context.Background(), "ev_000000000000000000000000")
		require.Len(t, sent, 3, "the first attempt and MaxRetries more")
		for i := 1; i < len(sent); i++ {
			assert.Equal(t, c.MaxRetryWait, sent[i].Sub(sent[i-1]), "an hour's Retry-After is cut to MaxRetryWait")
		}
		var e *keeper.Error
		require.ErrorAs(t, err, &e)
		assert.Equal(t, http.StatusServiceUnavailable, e.Status)
		assert.Equal(t, "busy", e.Code)
	})
}

func TestAnErrorCarriesTheAPIsCodeMessageFieldAndStatus(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	_, err := c.SubmitEvidence(context.Background(), keeper.EvidenceRequest{Digest: "abc", Chains: []string{"stub"}})
	var e *keeper.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusBadRequest, e.Status)
	assert.Equal(t, "invalid_digest", e.Code)
	assert.Equal(t, "digest", e.Field)
	assert.Equal(t, "digest must be a SHA-256 digest: 64 hex characters (HTTP 400, invalid_digest)", err.Error())
	assert.Equal(t, "tag:keeperhq.github.io,2026:problems/invalid_digest", e.Type, "read from the problem details")
	assert.Equal(t, "Invalid digest", e.Title)
	assert.Equal(t, e.Message, e.Detail)

	_, err = c.Receipt(context.Background(), "ev_000000000000000000000000")
	assert.True(t, keeper.IsCode(err, "not_found"), "%v", err)

	_, err = keeper.New("http://127.0.0.1:1").Evidence(context.Background(), "ev_000000000000000000000000")
	assert.ErrorContains(t, err, "cannot reach keeper API at http://127.0.0.1:1")

	// A proxy's answer in front of keeper has no JSON error: its status stays.
	s.setFront(func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		http.Error(w, "upstream down", http.StatusBadGateway)
		return true
	})
	_, err = c.Evidence(context.Background(), "ev_000000000000000000000000")
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusBadGateway, e.Status)
	assert.Empty(t, e.Code)
	assert.Equal(t, "502 Bad Gateway from "+strings.TrimPrefix(s.url, "http://")+", without keeper's JSON error (HTTP 502)", err.Error())
}

func TestAProblemWithoutKeepersCodeIsReadFromItsDetail(t *testing.T) {
	s := newAPI(t)
	s.setFront(func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusForbidden)
		w.Write([]byte(`{"type":"https://gateway.example/problems/quota","title":"Quota exceeded","status":403,"detail":"the gateway's daily quota is spent"}`))
		return true
	})
	_, err := keeper.New(s.url).Evidence(context.Background(), "ev_000000000000000000000000")
	var e *keeper.Error
	require.ErrorAs(t, err, &e)
	assert.Equal(t, http.StatusForbidden, e.Status)
	assert.Equal(t, "https://gateway.example/problems/quota", e.Type)
	assert.Equal(t, "the gateway's daily quota is spent (HTTP 403)", err.Error(), "one line, from the detail")
}

func TestTheTokenIsSentAndNeverShownInAnError(t *testing.T) {
	s := newAPI(t)
	got := make(chan string, 1)
	s.setFront(func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
		got <- r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"code":"unauthorized","message":"this route needs Authorization: Bearer <KEEPER_API_TOKEN>"}`))
		return true
	})
	c := keeper.New(s.url)
	c.Token = "s3cret"
	_, err := c.ListEvidence(context.Background(), keeper.ListOptions{})
	assert.Equal(t, "Bearer s3cret", <-got)
	assert.True(t, keeper.IsCode(err, "unauthorized"))
	assert.NotContains(t, err.Error(), "s3cret")
}

func TestListingPagesThroughEveryEvidenceAndRetryRedrivesADeadLetter(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	ctx := context.Background()
	var ids []string
	for i := range 3 {
		ev, err := c.SubmitEvidence(ctx, keeper.EvidenceRequest{Digest: digest(strings.Repeat("p", i+1)), Chains: []string{"stub"}})
		require.NoError(t, err)
		ids = append(ids, ev.ID)
	}
	var got []string
	o := keeper.ListOptions{Limit: 2}
	for {
		p, err := c.ListEvidence(ctx, o)
		require.NoError(t, err)
		for _, it := range p.Items {
			got = append(got, it.ID)
			assert.Empty(t, it.Salt, "lists carry no salt")
		}
		if p.NextCursor == "" {
			break
		}
		o.Cursor = p.NextCursor
	}
	assert.Equal(t, ids, got)

	_, err := c.RetryEvidence(ctx, ids[0])
	assert.True(t, keeper.IsCode(err, "not_dead_lettered"), "%v", err)
	b, ok, err := s.st.FormBatch(ctx, "stub", 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.st.DeadLetterBatch(ctx, b.ID, "stub: rejected"))
	dead, err := c.ListEvidence(ctx, keeper.ListOptions{Status: keeper.StatusDeadLetter})
	require.NoError(t, err)
	require.Len(t, dead.Items, 1)
	ev, err := c.RetryEvidence(ctx, dead.Items[0].ID)
	require.NoError(t, err)
	assert.Equal(t, keeper.StatusPending, ev.Status)
}

// confirm anchors every pending stub evidence in one batch.
func (s *api) confirm(t *testing.T) {
	ctx := context.Background()
	b, ok, err := s.st.FormBatch(ctx, "stub", 100)
	require.NoError(t, err)
	require.True(t, ok)
	leaves, err := s.st.BatchLeaves(ctx, b.ID)
	require.NoError(t, err)
	tree, err := merkle.Build(leaves)
	require.NoError(t, err)
	require.NoError(t, s.st.MarkSubmitted(ctx, b.ID, tree.Root(), "0xabc"))
	require.NoError(t, s.st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: "0xabc", Block: 5, BlockTime: time.Now(), Network: "stub:local"}))
}

func TestWaitConfirmedAnswersTheConfirmedEvidenceWithItsReceipt(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	ctx := context.Background()
	ev, err := c.SubmitEvidence(ctx, keeper.EvidenceRequest{Digest: digest("wait"), Chains: []string{"stub"}})
	require.NoError(t, err)
	_, err = c.Receipt(ctx, ev.ID)
	assert.True(t, keeper.IsCode(err, "not_confirmed"), "%v", err)

	var seen []string
	done, err := c.WaitConfirmed(ctx, ev.ID, 10*time.Millisecond, func(e *keeper.Evidence) {
		seen = append(seen, e.Status)
		if len(seen) == 2 {
			s.confirm(t)
		}
	})
	require.NoError(t, err)
	assert.Equal(t, keeper.StatusConfirmed, done.Status)
	require.NotNil(t, done.Receipt)
	assert.NoError(t, done.Receipt.CheckProof(done.Receipt.Anchors[0]))
	assert.Equal(t, []string{"pending", "pending", "confirmed"}, seen)

	r, err := c.Receipt(ctx, ev.ID)
	require.NoError(t, err)
	assert.Equal(t, *done.Receipt, *r)
}

func TestWaitConfirmedEndsWithTheErrorOfADeadLetter(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	ctx := context.Background()
	ev, err := c.SubmitEvidence(ctx, keeper.EvidenceRequest{Digest: digest("dead"), Chains: []string{"stub"}})
	require.NoError(t, err)
	b, _, err := s.st.FormBatch(ctx, "stub", 1)
	require.NoError(t, err)
	require.NoError(t, s.st.DeadLetterBatch(ctx, b.ID, "stub: permanently rejected"))
	_, err = c.WaitConfirmed(ctx, ev.ID, time.Millisecond, nil)
	assert.ErrorContains(t, err, "stub: permanently rejected")
}

func TestWalletsAndEpochsRoundTrip(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	ctx := context.Background()
	w, started, err := c.AddWallet(ctx, keeper.WalletRequest{Address: "9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin"})
	require.NoError(t, err)
	assert.True(t, started)
	require.Len(t, w.Networks, 1)
	assert.Equal(t, "PENDING", w.Networks[0].Status)
	_, started, err = c.AddWallet(ctx, keeper.WalletRequest{Address: w.Address})
	require.NoError(t, err)
	assert.False(t, started, "already at work")
	got, err := c.Wallet(ctx, w.Address)
	require.NoError(t, err)
	assert.Equal(t, w.Address, got.Address)
	page, err := c.Transfers(ctx, w.Address, keeper.TransferOptions{Network: "solana", Limit: 10})
	require.NoError(t, err)
	assert.Empty(t, page.Items)
	_, err = c.Transfers(ctx, w.Address, keeper.TransferOptions{Network: "bitcoin"})
	assert.True(t, keeper.IsCode(err, "unknown_network"), "%v", err)

	m, err := c.ComputeEpoch(ctx, "2026-11", keeper.EpochRequest{Pool: "1000", Usage: []keeper.Usage{{Account: "alice", Units: "3"}, {Account: "bob", Units: "1"}}})
	require.NoError(t, err)
	assert.Equal(t, "queued", m.Status)
	got2, err := c.Epoch(ctx, "2026-11")
	require.NoError(t, err)
	assert.Equal(t, m.RequestHash, got2.RequestHash)
	_, err = c.ComputeEpoch(ctx, "2026-11", keeper.EpochRequest{Pool: "999", Usage: []keeper.Usage{{Account: "alice", Units: "3"}}})
	assert.True(t, keeper.IsCode(err, "epoch_conflict"), "%v", err)
}

func TestWebhooksRoundTrip(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	ctx := context.Background()
	wh, err := c.CreateWebhook(ctx, keeper.WebhookRequest{URL: "https://hooks.example.com/keeper", Events: []string{"evidence.confirmed"}})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(wh.Secret, "whsec_"), "the secret, this once")
	assert.True(t, wh.Enabled)

	list, err := c.Webhooks(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)
	assert.Equal(t, wh.ID, list[0].ID)
	assert.Empty(t, list[0].Secret, "never again")
	got, err := c.Webhook(ctx, wh.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"evidence.confirmed"}, got.Events)
	assert.Empty(t, got.Secret)

	rotated, err := c.RotateWebhookSecret(ctx, wh.ID)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(rotated.Secret, "whsec_"))
	assert.NotEqual(t, wh.Secret, rotated.Secret)
	before := time.Now()
	graced, err := c.RotateWebhookSecretWithGrace(ctx, wh.ID, time.Hour)
	require.NoError(t, err)
	assert.NotEqual(t, rotated.Secret, graced.Secret)
	assert.WithinRange(t, graced.PreviousSecretExpiresAt, before.Truncate(time.Second).Add(time.Hour), time.Now().Add(time.Hour), "the old secret signs for an hour")
	graced, err = c.RotateWebhookSecretWithGrace(ctx, wh.ID, 0)
	require.NoError(t, err)
	assert.True(t, graced.PreviousSecretExpiresAt.IsZero(), "grace 0: the old secret stops at once")
	enabled, err := c.EnableWebhook(ctx, wh.ID)
	require.NoError(t, err)
	assert.True(t, enabled.Enabled)
	assert.Empty(t, enabled.Secret)

	ds, err := c.Deliveries(ctx, wh.ID, 10)
	require.NoError(t, err)
	assert.Empty(t, ds, "nothing happened yet")
	_, err = c.RetryDelivery(ctx, wh.ID, "msg_000000000000000000000000")
	var apiErr *keeper.Error
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, http.StatusNotFound, apiErr.Status)

	_, err = c.CreateWebhook(ctx, keeper.WebhookRequest{URL: "http://169.254.169.254/latest/meta-data/", Events: []string{"evidence.confirmed"}})
	require.ErrorAs(t, err, &apiErr)
	assert.Equal(t, "url", apiErr.Field)

	require.NoError(t, c.DeleteWebhook(ctx, wh.ID))
	_, err = c.Webhook(ctx, wh.ID)
	assert.True(t, keeper.IsCode(err, "not_found"), "%v", err)
}

func TestRedriveDryRunsThenRedrivesADeadLetteredBatchInOneCall(t *testing.T) {
	s := newAPI(t)
	c := keeper.New(s.url)
	ctx := context.Background()
	var ids []string
	for i := range 3 {
		ev, err := c.SubmitEvidence(ctx, keeper.EvidenceRequest{Digest: digest(strings.Repeat("r", i+1)), Chains: []string{"stub"}})
		require.NoError(t, err)
		ids = append(ids, ev.ID)
	}
	b, ok, err := s.st.FormBatch(ctx, "stub", 100)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.st.DeadLetterBatch(ctx, b.ID, "stub: provider down"))

	dry, err := c.Redrive(ctx, keeper.RedriveRequest{Batch: b.ID, Since: time.Now().Add(-time.Hour), DryRun: true})
	require.NoError(t, err)
	assert.True(t, dry.DryRun)
	assert.Equal(t, ids, dry.EvidenceIDs)
	require.Len(t, dry.Batches, 1)
	assert.Equal(t, "stub: provider down", dry.Batches[0].LastError)

	res, err := c.Redrive(ctx, keeper.RedriveRequest{Batch: b.ID})
	require.NoError(t, err)
	assert.Equal(t, 3, res.Evidence)
	assert.Equal(t, map[string]int{"stub": 3}, res.ByChain)
	ev, err := c.Evidence(ctx, ids[2])
	require.NoError(t, err)
	assert.Equal(t, keeper.StatusPending, ev.Status)

	_, err = c.Redrive(ctx, keeper.RedriveRequest{Chain: "bitcoin"})
	assert.True(t, keeper.IsCode(err, "unknown_chain"), "%v", err)
}
