package webhook_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/webhook"
)

// fixture serves the webhook routes over a store, checking every exchange
// against openapi.json.
type fixture struct {
	st  *store.Store
	web *webhook.HTTP
	h   http.Handler
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st := storetest.SQLite(t)
	web := &webhook.HTTP{Store: st, Logger: slog.New(slog.DiscardHandler)}
	var rs httpapi.Routes
	web.Routes(&rs)
	mux := http.NewServeMux()
	for _, r := range rs.List() {
		mux.Handle(r.Pattern, r)
	}
	return &fixture{st: st, web: web, h: openapitest.Handler(t, mux)}
}

// do sends body, when not empty, as JSON.
func (f *fixture) do(t *testing.T, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	return apitest.Do(t, f.h, method, path, body, nil)
}

// deadLetter takes in one evidence and dead-letters its batch: an
// evidence.dead_lettered event, recorded as a delivery to every webhook
// subscribed to it.
func (f *fixture) deadLetter(t *testing.T, seed string) store.Evidence {
	t.Helper()
	ctx := context.Background()
	ev, _, err := f.st.InsertEvidence(ctx, store.NewEvidence{Digest: sha256.Sum256([]byte(seed)), Chains: []string{"stub"}, Priority: 5})
	require.NoError(t, err)
	b, ok, err := f.st.FormBatch(ctx, "stub", 10)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, f.st.DeadLetterBatch(ctx, b.ID, "gave up"))
	return ev
}

func TestCreatingAWebhookShowsItsSecretOnceAndRotatingShowsANewOne(t *testing.T) {
	f := newFixture(t)
	rec := f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/keeper","events":["evidence.confirmed","epoch.failed","evidence.confirmed"]}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	created := apitest.Decode[api.Webhook](t, rec)
	assert.Equal(t, "/v1/webhooks/"+created.ID, rec.Header().Get("Location"))
	assert.Equal(t, []string{"evidence.confirmed", "epoch.failed"}, created.Events)
	assert.True(t, created.Enabled)
	require.True(t, strings.HasPrefix(created.Secret, "whsec_"), created.Secret)
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(created.Secret, "whsec_"))
	require.NoError(t, err)
	assert.GreaterOrEqual(t, len(raw), 24)

	for _, path := range []string{"/v1/webhooks/" + created.ID, "/v1/webhooks"} {
		rec := f.do(t, "GET", path, "")
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Contains(t, rec.Body.String(), created.ID)
		assert.NotContains(t, rec.Body.String(), "whsec_", "%s shows no secret", path)
	}

	rec = f.do(t, "POST", "/v1/webhooks/"+created.ID+"/rotate-secret", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rotated := apitest.Decode[api.Webhook](t, rec)
	assert.True(t, strings.HasPrefix(rotated.Secret, "whsec_"))
	assert.NotEqual(t, created.Secret, rotated.Secret)

	require.Equal(t, http.StatusNoContent, f.do(t, "DELETE", "/v1/webhooks/"+created.ID, "").Code)
	apitest.RequireRefused(t, f.do(t, "GET", "/v1/webhooks/"+created.ID, ""), 404, "not_found", "id")
	apitest.RequireRefused(t, f.do(t, "DELETE", "/v1/webhooks/"+created.ID, ""), 404, "not_found", "id")
}

func TestHostileWebhookURLsAndBadEventsAreRefusedNamingTheField(t *testing.T) {
	f := newFixture(t)
	for _, url := range []string{
		"http://hooks.example.com/", // plain http
		"https://169.254.169.254/latest/meta-data/",
		"https://localhost/hook",
		"https://127.0.0.1:8080/hook",
		"https://10.0.0.7/hook",
		"https://192.168.1.1/hook",
		"https://[::1]/hook",
		"https://[fe80::1]/hook",
		"https://[fe80::1%25eth0]/hook",
		"https://[fec0::1]/hook",
		// IPv6 forms that carry a non-public IPv4 address (docs/production.md,
		// URLs keeper fetches for callers).
		"https://[64:ff9b::a9fe:a9fe]/hook",
		"https://[64:ff9b::7f00:1]/hook",
		"https://[2002:a9fe:a9fe::1]/hook",
		"https://[::a9fe:a9fe]/hook",
		"https://[::7f00:1]/hook",
		"https://[::ffff:a9fe:a9fe]/hook",
		"https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/hook",
		// IPv4 addresses not written as a dotted quad.
		"https://127.1/hook",
		"https://2130706433/hook",
		"https://0x7f000001/hook",
		"https://0177.0.0.1/hook",
		"https://user:pass@hooks.example.com/",
		"file:///etc/passwd",
		"gopher://hooks.example.com/",
		"not a url",
	} {
		t.Run(url, func(t *testing.T) {
			apitest.RequireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"url":"`+url+`","events":["epoch.failed"]}`), 400, "invalid_url", "url")
		})
	}
	apitest.RequireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"events":["epoch.failed"]}`), 400, "missing_field", "url")
	apitest.RequireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/"}`), 400, "missing_field", "events")
	apitest.RequireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/","events":[]}`), 400, "missing_field", "events")
	apitest.RequireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/","events":["epoch.failed","evidence.lost"]}`), 400, "invalid_event", "events[1]")
	apitest.RequireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/","events":["epoch.failed"],"secret":"mine"}`), 400, "unknown_field", "secret")
	apitest.RequireRefused(t, f.do(t, "GET", "/v1/webhooks/wh_nothex", ""), 400, "invalid_id", "id")
	list := apitest.Decode[struct{ Webhooks []api.Webhook }](t, f.do(t, "GET", "/v1/webhooks", ""))
	assert.Empty(t, list.Webhooks, "nothing was stored")
}

func TestAFailedDeliveryIsListedAndReDrivenOnce(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	created := apitest.Decode[api.Webhook](t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/","events":["evidence.dead_lettered"]}`))
	ev := f.deadLetter(t, "a")

	base := "/v1/webhooks/" + created.ID + "/deliveries"
	list := apitest.Decode[struct{ Deliveries []api.Delivery }](t, f.do(t, "GET", base, ""))
	require.Len(t, list.Deliveries, 1)
	d := list.Deliveries[0]
	assert.Equal(t, "evidence.dead_lettered", d.Type)
	assert.Equal(t, ev.ID, d.ObjectID)
	assert.Equal(t, "pending", d.Status)

	apitest.RequireRefused(t, f.do(t, "POST", base+"/"+d.ID+"/retry", ""), 409, "not_failed", "delivery_id")
	require.NoError(t, f.st.FailDelivery(ctx, d.ID, 0, "retries used up"))
	rec := f.do(t, "POST", base+"/"+d.ID+"/retry", "")
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	assert.Equal(t, store.DeliveryPending, apitest.Decode[api.Delivery](t, rec).Status)
	apitest.RequireRefused(t, f.do(t, "POST", base+"/msg_000000000000000000000000/retry", ""), 404, "not_found", "delivery_id")
	apitest.RequireRefused(t, f.do(t, "GET", base+"?limit=0", ""), 400, "invalid_limit", "limit")
}

func TestRotatingWithAGraceShowsOnlyTheNewSecretAndWhenTheOldOneStopsSigning(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t)
		f.web.RotationGrace = 24 * time.Hour
		created := apitest.Decode[api.Webhook](t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/","events":["evidence.dead_lettered"]}`))
		path := "/v1/webhooks/" + created.ID

		before := time.Now()
		rec := f.do(t, "POST", path+"/rotate-secret", `{"grace":"1h"}`)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		rotated := apitest.Decode[api.Webhook](t, rec)
		assert.NotEqual(t, created.Secret, rotated.Secret)
		assert.NotContains(t, rec.Body.String(), created.Secret, "the old secret is never shown")
		assert.Equal(t, before.Add(time.Hour).UTC(), rotated.PreviousSecretExpiresAt.UTC(), "the bubble's clock has not moved")
		got := f.do(t, "GET", path, "")
		assert.NotContains(t, got.Body.String(), "whsec_")
		assert.Equal(t, rotated.PreviousSecretExpiresAt, apitest.Decode[api.Webhook](t, got).PreviousSecretExpiresAt)

		// Without a body the server's default grace applies.
		rotated = apitest.Decode[api.Webhook](t, f.do(t, "POST", path+"/rotate-secret", ""))
		assert.Equal(t, time.Now().Add(24*time.Hour).UTC(), rotated.PreviousSecretExpiresAt.UTC())
		// "0s" replaces the secret outright.
		rotated = apitest.Decode[api.Webhook](t, f.do(t, "POST", path+"/rotate-secret", `{"grace":"0s"}`))
		assert.True(t, rotated.PreviousSecretExpiresAt.IsZero())

		_, target, err := deliveryTarget(t, f, created.ID)
		require.NoError(t, err)
		for _, bad := range []string{`{"grace":"soon"}`, `{"grace":"169h"}`, `{"grace":"-1h"}`, `{"grace":3600}`, `{"graceful":"1h"}`} {
			rec := f.do(t, "POST", path+"/rotate-secret", bad)
			require.Equal(t, http.StatusBadRequest, rec.Code, bad)
			var refusal struct{ Field string }
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &refusal))
			assert.True(t, strings.HasPrefix(refusal.Field, "grace"), "%s: field %q", bad, refusal.Field)
		}
		_, after, err := deliveryTarget(t, f, created.ID)
		require.NoError(t, err)
		assert.Equal(t, target.Secrets, after.Secrets, "a refused rotation changes nothing")
		apitest.RequireRefused(t, f.do(t, "POST", path+"/rotate-secret", `{"grace":"soon"}`), 400, "invalid_grace", "grace")
		apitest.RequireRefused(t, f.do(t, "POST", "/v1/webhooks/wh_000000000000000000000000/rotate-secret", `{"grace":"1h"}`), 404, "not_found", "id")
	})
}

// deliveryTarget records a delivery to the webhook and returns its target.
func deliveryTarget(t *testing.T, f *fixture, id string) (store.Delivery, store.Target, error) {
	t.Helper()
	ds, err := f.st.ListDeliveries(context.Background(), id, 1)
	require.NoError(t, err)
	if len(ds) == 0 {
		f.deadLetter(t, "target "+id)
		ds, err = f.st.ListDeliveries(context.Background(), id, 1)
		require.NoError(t, err)
		require.Len(t, ds, 1)
	}
	return f.st.DeliveryTarget(context.Background(), ds[0].ID)
}

func TestAWebhookDisabledByA410ShowsWhyAndIsEnabledByTheEnableCall(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	created := apitest.Decode[api.Webhook](t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/","events":["evidence.dead_lettered"]}`))
	d, _, err := deliveryTarget(t, f, created.ID)
	require.NoError(t, err)
	disabled, err := f.st.RecordDeliveryAttempt(ctx, d.ID, d.Run, store.Attempt{Status: http.StatusGone, Error: "answered 410", At: time.Now(), Gone: true})
	require.NoError(t, err)
	require.True(t, disabled)

	path := "/v1/webhooks/" + created.ID
	got := apitest.Decode[api.Webhook](t, f.do(t, "GET", path, ""))
	assert.False(t, got.Enabled)
	assert.Equal(t, "the endpoint answered 410 Gone", got.DisabledReason)
	assert.False(t, got.DisabledAt.IsZero())

	rec := f.do(t, "POST", path+"/enable", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	enabled := apitest.Decode[api.Webhook](t, rec)
	assert.True(t, enabled.Enabled)
	assert.Empty(t, enabled.DisabledReason)
	assert.True(t, enabled.DisabledAt.IsZero())
	assert.Empty(t, enabled.Secret, "enabling shows no secret")
	assert.True(t, apitest.Decode[api.Webhook](t, f.do(t, "GET", path, "")).Enabled)
	require.Equal(t, http.StatusOK, f.do(t, "POST", path+"/enable", "").Code, "enabling an enabled webhook is fine")
	apitest.RequireRefused(t, f.do(t, "POST", "/v1/webhooks/wh_000000000000000000000000/enable", ""), 404, "not_found", "id")
	apitest.RequireRefused(t, f.do(t, "POST", "/v1/webhooks/wh_nothex/enable", ""), 400, "invalid_id", "id")
}
