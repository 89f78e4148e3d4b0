package starter_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/codec"
	"github.com/keeperhq/keeper/internal/epoch"
	"github.com/keeperhq/keeper/internal/settlement"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/internal/temporalfake"
	"github.com/keeperhq/keeper/internal/webhook"
)

// everyRoute is an API with every feature and optional part: evidence, wallets,
// epochs with the built-in ledger, and the codec.
func everyRoute(t *testing.T) *starter.API {
	st := storetest.SQLite(t)
	c, err := codec.New(codec.Key{ID: "k1", Secret: [codec.KeySize]byte{1}})
	require.NoError(t, err)
	return &starter.API{Store: st,
		Features: []starter.Feature{
			&anchor.HTTP{Store: st, Chains: []string{"stub"}, MaxPending: 100, Logger: slog.New(slog.DiscardHandler)},
			&webhook.HTTP{Store: st, Logger: slog.New(slog.DiscardHandler)},
			&epoch.HTTP{Store: st, Temporal: &temporalfake.Client{}, Options: epoch.Options{MaxInFlight: 4, Duration: time.Hour}, Ledger: &settlement.Server{Store: st}},
			&backfill.HTTP{Store: st, Networks: []backfill.Network{{Name: "solana", Unit: "signatures", Parse: func(s string) (string, error) { return s, nil }}}},
		},
		Logger: slog.New(slog.DiscardHandler),
		Codec:  starter.CodecOptions{Handler: c.Handler()},
	}
}

func TestTheDescriptionHasEveryRouteOfTheAPIAndNoOther(t *testing.T) {
	doc, err := openapitest.Description()
	require.NoError(t, err)
	described := map[string][]string{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			// The codec's CORS preflight is answered before routing.
			if method == http.MethodOptions && strings.HasPrefix(path, "/codec/") {
				continue
			}
			described[path] = append(described[path], method)
		}
		sort.Strings(described[path])
	}
	assert.Equal(t, everyRoute(t).RouteTable(), described)
}

func TestTheAPIServesItsDescription(t *testing.T) {
	h := openapitest.Handler(t, everyRoute(t).Handler())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	served, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	require.NoError(t, err)
	assert.Equal(t, "3.1.0", served.OpenAPI)
	require.NoError(t, served.Validate(context.Background()))
	assert.NotNil(t, served.Paths.Find("/v1/evidence"))
}

// The answers no other test asks for: the verify page and the ledger's
// reads and replays, each checked against the description.
func TestTheVerifyPageAndTheLedgersAnswersAreDescribed(t *testing.T) {
	h := openapitest.Handler(t, everyRoute(t).Handler())
	send := func(method, path, body, key string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	page := send("GET", "/verify", "", "")
	require.Equal(t, http.StatusOK, page.Code)
	assert.Contains(t, page.Header().Get("Content-Type"), "text/html")

	intent := `{"epoch":"e","account":"alice","amount":"5"}`
	assert.Equal(t, http.StatusCreated, send("POST", "/ledger/v1/intents", intent, "epoch-e-alice").Code)
	replay := send("POST", "/ledger/v1/intents", intent, "epoch-e-alice")
	assert.Equal(t, http.StatusOK, replay.Code)
	assert.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
	reused := send("POST", "/ledger/v1/intents", `{"epoch":"e","account":"alice","amount":"6"}`, "epoch-e-alice")
	assert.Equal(t, http.StatusUnprocessableEntity, reused.Code)
	assert.Contains(t, reused.Body.String(), "idempotency_key_reused")
	assert.Equal(t, http.StatusOK, send("GET", "/ledger/v1/intents/epoch-e-alice", "", "").Code)
	assert.Equal(t, http.StatusNotFound, send("GET", "/ledger/v1/intents/epoch-e-bob", "", "").Code)
	assert.Equal(t, http.StatusBadRequest, send("POST", "/ledger/v1/intents", intent, "").Code, "the key is required")
}
