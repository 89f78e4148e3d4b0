package starter_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/store"
)

type webhookJSON struct {
	ID      string   `json:"id"`
	URL     string   `json:"url"`
	Events  []string `json:"events"`
	Secret  string   `json:"secret"`
	Enabled bool     `json:"enabled"`
}

type deliveryJSON struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	ObjectID string `json:"object_id"`
	Status   string `json:"status"`
}

func TestCreatingAWebhookShowsItsSecretOnceAndRotatingShowsANewOne(t *testing.T) {
	f := newFixture(t, 100)
	rec := f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/keeper","events":["evidence.confirmed","epoch.failed","evidence.confirmed"]}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	created := decode[webhookJSON](t, rec)
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
	rotated := decode[webhookJSON](t, rec)
	assert.True(t, strings.HasPrefix(rotated.Secret, "whsec_"))
	assert.NotEqual(t, created.Secret, rotated.Secret)

	require.Equal(t, http.StatusNoContent, f.do(t, "DELETE", "/v1/webhooks/"+created.ID, "").Code)
	requireRefused(t, f.do(t, "GET", "/v1/webhooks/"+created.ID, ""), 404, "not_found", "id")
	requireRefused(t, f.do(t, "DELETE", "/v1/webhooks/"+created.ID, ""), 404, "not_found", "id")
}

func TestHostileWebhookURLsAndBadEventsAreRefusedNamingTheField(t *testing.T) {
	f := newFixture(t, 100)
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
		// IPv6 forms that carry a non-public IPv4 address (issue 26).
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
			requireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"url":"`+url+`","events":["epoch.failed"]}`), 400, "invalid_url", "url")
		})
	}
	requireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"events":["epoch.failed"]}`), 400, "missing_field", "url")
	requireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/"}`), 400, "missing_field", "events")
	requireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/","events":[]}`), 400, "missing_field", "events")
	requireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/","events":["epoch.failed","evidence.lost"]}`), 400, "invalid_event", "events[1]")
	requireRefused(t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/","events":["epoch.failed"],"secret":"mine"}`), 400, "unknown_field", "secret")
	requireRefused(t, f.do(t, "GET", "/v1/webhooks/wh_nothex", ""), 400, "invalid_id", "id")
	list := decode[struct{ Webhooks []webhookJSON }](t, f.do(t, "GET", "/v1/webhooks", ""))
	assert.Empty(t, list.Webhooks, "nothing was stored")
}

func TestAFailedDeliveryIsListedAndReDrivenOnce(t *testing.T) {
	f := newFixture(t, 100)
	ctx := context.Background()
	created := decode[webhookJSON](t, f.do(t, "POST", "/v1/webhooks", `{"url":"https://hooks.example.com/","events":["evidence.dead_lettered"]}`))
	ev := f.submit(t, "a", 5)
	b, ok, err := f.st.FormBatch(ctx, "stub", 10)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, f.st.DeadLetterBatch(ctx, b.ID, "gave up"))

	base := "/v1/webhooks/" + created.ID + "/deliveries"
	list := decode[struct{ Deliveries []deliveryJSON }](t, f.do(t, "GET", base, ""))
	require.Len(t, list.Deliveries, 1)
	d := list.Deliveries[0]
	assert.Equal(t, "evidence.dead_lettered", d.Type)
	assert.Equal(t, ev.ID, d.ObjectID)
	assert.Equal(t, "pending", d.Status)

	requireRefused(t, f.do(t, "POST", base+"/"+d.ID+"/retry", ""), 409, "not_failed", "delivery_id")
	require.NoError(t, f.st.FailDelivery(ctx, d.ID, 0, "retries used up"))
	rec := f.do(t, "POST", base+"/"+d.ID+"/retry", "")
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	assert.Equal(t, store.DeliveryPending, decode[deliveryJSON](t, rec).Status)
	requireRefused(t, f.do(t, "POST", base+"/msg_000000000000000000000000/retry", ""), 404, "not_found", "delivery_id")
	requireRefused(t, f.do(t, "GET", base+"?limit=0", ""), 400, "invalid_limit", "limit")
}
