package starter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/settlement"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/temporalfake"
)

// newHostileFixture serves every route at once: evidence, wallets, epochs
// and the built-in ledger, logging into logs.
func newHostileFixture(t *testing.T) (*fixture, *temporalfake.Client, *bytes.Buffer) {
	t.Helper()
	f, w := newWalletFixture(t)
	logs := &bytes.Buffer{}
	tc := &temporalfake.Client{}
	f.api.Logger = slog.New(slog.NewTextHandler(logs, nil))
	w.Logger = f.api.Logger
	f.api.Temporal, f.api.Ledger = tc, &settlement.Server{Store: f.st}
	f.api.Epochs = starter.EpochOptions{MaxInFlight: 64, Duration: time.Hour, Heartbeat: 10 * time.Second}
	f.h = openapitest.Handler(t, f.api.Handler())
	return f, tc, logs
}

func TestHostileRequestsOnEveryRouteAre4xxWithAJSONErrorAndStoreNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f, temporal, logs := newHostileFixture(t)
		ctx := context.Background()
		// One wallet is there, so its reads get as far as their parameters.
		require.Equal(t, http.StatusAccepted, f.do(t, "POST", "/v1/wallets", `{"address":"`+evmWallet+`"}`).Code)

		tenMB := strings.Repeat("a", 10<<20)
		sol := func(extra string) string { return `{"address":"` + solWallet + `"` + extra + `}` }
		usage := `"usage":[{"account":"alice","units":"1"}]`
		compute := "/rewarder/epochs/e/compute"
		intent := func(fields string) string { return `{"epoch":"e",` + fields + `}` }
		key := map[string]string{"Idempotency-Key": "epoch-e-alice"}
		transfers := "/v1/wallets/" + evmWallet + "/transfers"

		rows := []struct {
			name         string
			method, path string
			body         string
			header       map[string]string // on top of Content-Type: application/json when there is a body
			status       int
			code, field  string
		}{
			// POST /v1/wallets.
			{"a wallet body cut short", "POST", "/v1/wallets", `{"address":"` + solWallet, nil, 400, "invalid_json", ""},
			{"a wallet body of two objects", "POST", "/v1/wallets", sol("") + sol(""), nil, 400, "invalid_json", ""},
			{"networks as a string", "POST", "/v1/wallets", sol(`,"networks":"solana"`), nil, 400, "invalid_type", "networks"},
			{"an address that is a huge number", "POST", "/v1/wallets", `{"address":1e999999}`, nil, 400, "invalid_type", "address"},
			{"a 10 MB wallet body", "POST", "/v1/wallets", `{"address":"` + tenMB + `"}`, nil, 413, "body_too_large", ""},
			{"an address of almost a megabyte of base58", "POST", "/v1/wallets", `{"address":"` + strings.Repeat("z", 1<<20-20) + `"}`, nil, 400, "invalid_address", "address"},
			{"an address with a Cyrillic homoglyph", "POST", "/v1/wallets", `{"address":"0x52908400098527886е0f7030069857d2e4169ee7"}`, nil, 400, "invalid_address", "address"},
			{"an address with a right-to-left override", "POST", "/v1/wallets", `{"address":"\u202e` + solWallet + `"}`, nil, 400, "invalid_address", "address"},
			{"an address with a NUL", "POST", "/v1/wallets", `{"address":"` + solWallet + `\u0000"}`, nil, 400, "invalid_address", "address"},
			{"an address in invalid UTF-8", "POST", "/v1/wallets", "{\"address\":\"\xff\xfe\"}", nil, 400, "invalid_json", ""},
			{"an address with an overlong encoding of '.'", "POST", "/v1/wallets", "{\"address\":\"\xc0\xae\xc0\xae\"}", nil, 400, "invalid_json", ""},
			{"networks given twice", "POST", "/v1/wallets", sol(`,"networks":["solana"],"networks":["etherlink"]`), nil, 400, "duplicate_field", "networks"},
			{"Address capitalised", "POST", "/v1/wallets", `{"Address":"` + solWallet + `"}`, nil, 400, "unknown_field", "Address"},
			{"a key with a Cyrillic homoglyph", "POST", "/v1/wallets", `{"аddress":"` + solWallet + `"}`, nil, 400, "unknown_field", "аddress"},
			{"an unknown wallet field", "POST", "/v1/wallets", sol(`,"label":"cold"`), nil, 400, "unknown_field", "label"},
			{"a network with a Cyrillic homoglyph", "POST", "/v1/wallets", sol(`,"networks":["ѕolana"]`), nil, 400, "unknown_network", "networks"},
			{"a null network", "POST", "/v1/wallets", sol(`,"networks":[null]`), nil, 400, "unknown_network", "networks"},
			{"a wallet sent as text/plain", "POST", "/v1/wallets", sol(""), map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type", "Content-Type"},
			{"a wallet sent as a form", "POST", "/v1/wallets", "address=" + solWallet, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", "Content-Type"},
			{"a wallet in UTF-16", "POST", "/v1/wallets", sol(""), map[string]string{"Content-Type": "application/json; charset=utf-16"}, 415, "unsupported_media_type", "Content-Type"},
			{"GET on the wallet collection", "GET", "/v1/wallets", "", nil, 405, "method_not_allowed", ""},
			{"DELETE on the wallet collection", "DELETE", "/v1/wallets", "", nil, 405, "method_not_allowed", ""},
			// GET /v1/wallets/{address} and …/transfers.
			{"a wallet path escaping upwards", "GET", "/v1/wallets/..%2F..%2Fetc%2Fpasswd", "", nil, 400, "invalid_path", ""},
			{"a NUL address in the path", "GET", "/v1/wallets/%00", "", nil, 400, "invalid_address", "address"},
			{"an address in the path behind a right-to-left override", "GET", "/v1/wallets/%E2%80%AE" + solWallet, "", nil, 400, "invalid_address", "address"},
			{"an overlong '..' as the address", "GET", "/v1/wallets/%C0%AE%C0%AE", "", nil, 400, "invalid_address", "address"},
			{"an address of 60 KB in the path", "GET", "/v1/wallets/" + strings.Repeat("z", 60<<10), "", nil, 400, "invalid_address", "address"},
			{"POST on a wallet", "POST", "/v1/wallets/" + evmWallet, sol(""), nil, 405, "method_not_allowed", ""},
			{"a huge transfers limit", "GET", transfers + "?limit=99999999999999999999", "", nil, 400, "invalid_limit", "limit"},
			{"a transfers network with a Cyrillic homoglyph", "GET", transfers + "?network=%D1%95olana", "", nil, 400, "unknown_network", "network"},
			{"a NUL transfers cursor", "GET", transfers + "?cursor=%00", "", nil, 400, "invalid_cursor", "cursor"},
			{"limit given twice", "GET", transfers + "?limit=1&limit=5000", "", nil, 400, "duplicate_parameter", "limit"},
			{"Network capitalised", "GET", transfers + "?Network=solana", "", nil, 400, "unknown_parameter", "Network"},
			{"DELETE on transfers", "DELETE", transfers, "", nil, 405, "method_not_allowed", ""},
			// POST /rewarder/epochs/{id}/compute and GET /rewarder/epochs/{id}.
			{"an epoch id escaping upwards", "POST", "/rewarder/epochs/..%2F..%2Fetc/compute", `{"pool":"1",` + usage + `}`, nil, 400, "invalid_path", ""},
			{"an epoch id of '..'", "POST", "/rewarder/epochs/%2E%2E/compute", `{"pool":"1",` + usage + `}`, nil, 400, "invalid_path", ""},
			{"an epoch id with a right-to-left override", "POST", "/rewarder/epochs/2026%E2%80%AE11/compute", `{"pool":"1",` + usage + `}`, nil, 400, "invalid_id", "id"},
			{"an epoch id with a Cyrillic homoglyph", "POST", "/rewarder/epochs/%D0%B5/compute", `{"pool":"1",` + usage + `}`, nil, 400, "invalid_id", "id"},
			{"an epoch id with a trailing newline", "POST", "/rewarder/epochs/e%0A/compute", `{"pool":"1",` + usage + `}`, nil, 400, "invalid_id", "id"},
			{"an epoch id with a NUL", "GET", "/rewarder/epochs/e%00", "", nil, 400, "invalid_id", "id"},
			{"Account capitalised inside a usage entry", "POST", compute, `{"pool":"1","usage":[{"ACCOUNT":"alice","units":"1"}]}`, nil, 400, "unknown_field", "usage[0].ACCOUNT"},
			{"an account given twice inside a usage entry", "POST", compute, `{"pool":"1","usage":[{"account":"alice","units":"1"},{"account":"bob","account":"mallory","units":"1"}]}`, nil, 400, "duplicate_field", "usage[1].account"},
			{"pool given twice", "POST", compute, `{"pool":"1","pool":"1000",` + usage + `}`, nil, 400, "duplicate_field", "pool"},
			{"a pool that is a huge JSON number", "POST", compute, `{"pool":1e400,` + usage + `}`, nil, 400, "invalid_type", "pool"},
			{"a pool of a hundred digits", "POST", compute, `{"pool":"1` + strings.Repeat("0", 100) + `",` + usage + `}`, nil, 400, "invalid_pool", "pool"},
			{"units of thirty digits", "POST", compute, `{"pool":"1","usage":[{"account":"alice","units":"` + strings.Repeat("9", 30) + `"}]}`, nil, 400, "invalid_units", "usage[0].units"},
			{"an account with a Cyrillic homoglyph", "POST", compute, `{"pool":"1","usage":[{"account":"аlice","units":"1"}]}`, nil, 400, "invalid_account", "usage[0].account"},
			{"an account with a NUL", "POST", compute, `{"pool":"1","usage":[{"account":"alice\u0000","units":"1"}]}`, nil, 400, "invalid_account", "usage[0].account"},
			{"a null usage entry", "POST", compute, `{"pool":"1","usage":[null]}`, nil, 400, "invalid_account", "usage[0].account"},
			{"a deadline beyond any duration", "POST", compute, `{"pool":"1",` + usage + `,"deadline":"9999999999999h"}`, nil, 400, "invalid_deadline", "deadline"},
			{"a source whose host hides a right-to-left override", "POST", compute, `{"pool":"1","source":"http://acct.example\u202e/u"}`, nil, 400, "invalid_source", "source"},
			{"a 10 MB compute body", "POST", compute, `{"pool":"1","usage":[{"account":"` + tenMB + `","units":"1"}]}`, nil, 413, "body_too_large", "usage"},
			{"a compute body sent as text/plain", "POST", compute, `{"pool":"1",` + usage + `}`, map[string]string{"Content-Type": "text/plain;charset=UTF-8"}, 415, "unsupported_media_type", "Content-Type"},
			{"PUT on an epoch", "PUT", "/rewarder/epochs/e", `{"pool":"1",` + usage + `}`, nil, 405, "method_not_allowed", ""},
			{"GET on compute", "GET", compute, "", nil, 405, "method_not_allowed", ""},
			// The built-in ledger under /ledger/v1.
			{"an intent with account given twice", "POST", "/ledger/v1/intents", intent(`"account":"alice","account":"mallory","amount":"5"`), key, 400, "duplicate_field", "account"},
			{"an intent with AMOUNT capitalised", "POST", "/ledger/v1/intents", intent(`"account":"alice","AMOUNT":"5"`), key, 400, "unknown_field", "AMOUNT"},
			{"an intent amount as a JSON number", "POST", "/ledger/v1/intents", intent(`"account":"alice","amount":5`), key, 400, "invalid_type", "amount"},
			{"an intent amount of fifty digits", "POST", "/ledger/v1/intents", intent(`"account":"alice","amount":"1` + strings.Repeat("0", 50) + `"`), key, 400, "invalid_amount", "amount"},
			{"an Idempotency-Key with a right-to-left override", "POST", "/ledger/v1/intents", intent(`"account":"alice","amount":"5"`), map[string]string{"Idempotency-Key": "epoch-e-\u202ealice"}, 400, "invalid_idempotency_key", "Idempotency-Key"},
			{"an intent sent as text/plain", "POST", "/ledger/v1/intents", intent(`"account":"alice","amount":"5"`), map[string]string{"Idempotency-Key": "epoch-e-alice", "Content-Type": "text/plain"}, 415, "unsupported_media_type", "Content-Type"},
			{"a 10 MB intent", "POST", "/ledger/v1/intents", intent(`"account":"` + tenMB + `","amount":"5"`), key, 413, "body_too_large", ""},
			{"a huge intents limit", "GET", "/ledger/v1/epochs/e/intents?limit=1e9", "", nil, 400, "invalid_limit", "limit"},
			{"a ledger path escaping upwards", "GET", "/ledger/v1/epochs/..%2F..%2Fetc/intents", "", nil, 400, "invalid_path", ""},
			{"DELETE on the intents", "DELETE", "/ledger/v1/intents", "", nil, 405, "method_not_allowed", ""},
			// POST /v1/evidence, beyond its own table.
			{"evidence sent as text/plain", "POST", "/v1/evidence", `{"digest":"` + hexDigest("x") + `","chains":["etherlink"]}`, map[string]string{"Content-Type": "text/plain"}, 415, "unsupported_media_type", "Content-Type"},
			{"evidence sent as multipart", "POST", "/v1/evidence", `{"digest":"` + hexDigest("x") + `","chains":["etherlink"]}`, map[string]string{"Content-Type": "multipart/form-data; boundary=x"}, 415, "unsupported_media_type", "Content-Type"},
			{"a 10 MB evidence", "POST", "/v1/evidence", `{"digest":"` + hexDigest("x") + `","chains":["etherlink"],"metadata":{"a":"` + tenMB + `"}}`, nil, 413, "body_too_large", ""},
			// /health, /readyz, /metrics and routes that do not exist.
			{"a 10 MB PUT on /health", "PUT", "/health", tenMB, nil, 405, "method_not_allowed", ""},
			{"POST on /readyz", "POST", "/readyz", `{}`, nil, 405, "method_not_allowed", ""},
			{"DELETE on /metrics", "DELETE", "/metrics", "", nil, 405, "method_not_allowed", ""},
			{"a path from /health to the API", "GET", "/health/../v1/evidence", "", nil, 400, "invalid_path", ""},
			{"/HEALTH in capitals", "GET", "/HEALTH", "", nil, 404, "not_found", ""},
			{"/metrics with a NUL", "GET", "/metrics%00", "", nil, 404, "not_found", ""},
			{"/readyz with a trailing slash", "GET", "/readyz/", "", nil, 404, "not_found", ""},
			{"the epoch collection", "GET", "/rewarder/epochs", "", nil, 404, "not_found", ""},
			{"a route behind a right-to-left override", "GET", "/v1/%E2%80%AEevidence", "", nil, 404, "not_found", ""},
			{"a sub-resource of transfers", "GET", transfers + "/0x01", "", nil, 404, "not_found", ""},
		}
		require.GreaterOrEqual(t, len(rows), 40)

		// The bubble's clock moves only when the server waits: a hostile request
		// that held it (a timer, a pause, a body read to its deadline) shows.
		// Subtests cannot run in a bubble, so each row's name is in its messages.
		type refusal struct {
			Status      int
			Code, Field string
		}
		for _, row := range rows {
			start := time.Now()
			rec := f.doWith(t, row.method, row.path, row.body, row.header)
			assert.Zero(t, time.Since(start), "%s: a hostile request does not hold the server", row.name)
			var e errorJSON
			_ = json.Unmarshal(rec.Body.Bytes(), &e)
			assert.Equal(t, refusal{row.status, row.code, row.field}, refusal{rec.Code, e.Code, e.Field}, "%s is refused", row.name)
			requireRefused(t, rec, row.status, row.code, row.field)
		}

		assert.NotContains(t, logs.String(), "panicked")
		assert.NotContains(t, logs.String(), "level=ERROR", "no client mistake reached an internal error")

		// Nothing was stored: no evidence, no wallet but the first, no epoch, no intent.
		assert.Empty(t, f.stored(t))
		due, err := f.st.UnstartedWallets(ctx, 10)
		require.NoError(t, err)
		require.Len(t, due, 1)
		assert.Equal(t, evmWallet, due[0].Wallet)
		_, err = f.st.WalletStatus(ctx, solWallet)
		assert.ErrorIs(t, err, store.ErrNotFound)
		_, err = f.st.GetEpoch(ctx, "e")
		assert.ErrorIs(t, err, store.ErrNotFound)
		stats, err := f.st.EpochStats(ctx)
		require.NoError(t, err)
		assert.Zero(t, stats.InFlight)
		assert.Empty(t, started(temporal))
		held, err := f.st.LedgerIntents(ctx, "e", "", 10)
		require.NoError(t, err)
		assert.Empty(t, held)
	})
}

// A client that sends its headers and then only part of its body is cut
// off at the server's read timeout with a 408, and nothing is stored.
func TestASlowLorisBodyIsCutOffAtTheReadTimeoutAndStoresNothing(t *testing.T) {
	f, temporal, _ := newHostileFixture(t)
	srv := httptest.NewUnstartedServer(f.h)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)

	for path, part := range map[string]string{
		"/v1/evidence":               `{"digest":"` + hexDigest("slow") + `","chains":["stub"]`,
		"/v1/wallets":                `{"address":"` + solWallet + `"`,
		"/rewarder/epochs/e/compute": `{"pool":"1","usage":[{"account":"alice","units":"1"}]`,
	} {
		pr, pw := io.Pipe()
		// The 408 with body_timeout is the read timeout's answer; the
		// context only keeps a server that never answers from hanging the run.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+path, pr)
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/json")
		go func() { _, _ = pw.Write([]byte(part)) }() // the rest never comes
		resp, err := srv.Client().Do(req)
		require.NoError(t, err, path)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		pw.Close()
		require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s: %s", path, raw)
		var e errorJSON
		require.NoError(t, json.Unmarshal(raw, &e), path)
		assert.Equal(t, "body_timeout", e.Code, path)
		assert.NotEmpty(t, e.Message, path)
	}

	assert.Empty(t, f.stored(t))
	_, err := f.st.WalletStatus(context.Background(), solWallet)
	assert.ErrorIs(t, err, store.ErrNotFound)
	_, err = f.st.GetEpoch(context.Background(), "e")
	assert.ErrorIs(t, err, store.ErrNotFound)
	assert.Empty(t, started(temporal))
}

func TestJSONIsAcceptedWithACharsetOrWithoutAContentType(t *testing.T) {
	f, _, _ := newHostileFixture(t)
	for i, ct := range []string{"application/json; charset=UTF-8", "application/merge-patch+json", ""} {
		rec := f.doWith(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest(ct)+`","chains":["etherlink"]}`, map[string]string{"Content-Type": ct})
		require.Equal(t, http.StatusAccepted, rec.Code, "%q: %s", ct, rec.Body.String())
		assert.Len(t, f.stored(t), i+1)
	}
}
