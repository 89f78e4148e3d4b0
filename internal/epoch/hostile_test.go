package epoch_test

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

	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/store"
)

// requireNothingStored checks that no epoch, no epoch in flight, no
// workflow start and no ledger intent came of the requests.
func (f *fixture) requireNothingStored(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	_, err := f.st.GetEpoch(ctx, "e")
	assert.ErrorIs(t, err, store.ErrNotFound)
	stats, err := f.st.EpochStats(ctx)
	require.NoError(t, err)
	assert.Zero(t, stats.InFlight)
	assert.Empty(t, started(f.temporal))
	held, err := f.st.LedgerIntents(ctx, "e", "", 10)
	require.NoError(t, err)
	assert.Empty(t, held)
}

func TestHostileRequestsOnTheEpochAndLedgerRoutesAre4xxWithAJSONErrorAndStoreNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 64)
		logs := &bytes.Buffer{}
		f.api.Logger = slog.New(slog.NewTextHandler(logs, nil))
		f.epochs.Logger = f.api.Logger
		tenMB := strings.Repeat("a", 10<<20)
		usage := `"usage":[{"account":"alice","units":"1"}]`
		compute := "/rewarder/epochs/e/compute"
		intent := func(fields string) string { return `{"epoch":"e",` + fields + `}` }
		key := map[string]string{"Idempotency-Key": "epoch-e-alice"}

		rows := []struct {
			Name, Method, Path, Body string
			Header                   map[string]string // on top of Content-Type: application/json when there is a body
			Status                   int
			Code, Field              string
		}{
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
			{"the epoch collection", "GET", "/rewarder/epochs", "", nil, 404, "not_found", ""},
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
		}

		apitest.RequireAllRefused(t, f.h, logs, rows)
		f.requireNothingStored(t)
	})
}

// A client that sends its headers and then only part of a compute body is
// cut off at the server's read timeout with a 408, and nothing is stored.
func TestASlowLorisComputeBodyIsCutOffAtTheReadTimeoutAndStoresNothing(t *testing.T) {
	f := newFixture(t, 64)
	srv := httptest.NewUnstartedServer(f.h)
	srv.Config.ReadTimeout = 300 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)

	pr, pw := io.Pipe()
	defer pw.Close()
	// The 408 with body_timeout is the read timeout's answer; the context
	// only keeps a server that never answers from hanging the run.
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+"/rewarder/epochs/e/compute", pr)
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	go func() { _, _ = pw.Write([]byte(`{"pool":"1","usage":[{"account":"alice","units":"1"}]`)) }() // the rest never comes
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", raw)
	var e apitest.Problem
	require.NoError(t, json.Unmarshal(raw, &e))
	assert.Equal(t, "body_timeout", e.Code)
	assert.NotEmpty(t, e.Message)
	f.requireNothingStored(t)
}
