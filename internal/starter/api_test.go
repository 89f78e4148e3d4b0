package starter_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// fixture serves the API with one feature, the evidence routes, over a
// store: what cuts across the features (auth, limits, deadlines, paths,
// health) is exercised on them.
type fixture struct {
	st  *store.Store
	api *starter.API
	h   http.Handler
}

func newFixture(t *testing.T, chains ...string) *fixture {
	t.Helper()
	st := storetest.SQLite(t)
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	api := &starter.API{Store: st, Checks: []starter.Check{{Name: "store", Ping: st.Ping}}, Logger: logger,
		Features: []starter.Feature{evidenceRoutes(st, chains...)}}
	return &fixture{st: st, api: api, h: openapitest.Handler(t, api.Handler())}
}

// evidenceRoutes are the evidence routes over st, on chains (the stub when
// none).
func evidenceRoutes(st *store.Store, chains ...string) *anchor.HTTP {
	if len(chains) == 0 {
		chains = []string{"stub"}
	}
	return &anchor.HTTP{Store: st, Chains: chains, MaxPending: 100, Logger: slog.New(slog.DiscardHandler)}
}

// doWith sends a body as JSON, with header on top.
func (f *fixture) doWith(t *testing.T, method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	return apitest.Do(t, f.h, method, path, body, header)
}

// stored lists the ids of every evidence the store holds.
func (f *fixture) stored(t *testing.T) []string {
	t.Helper()
	evs, next, err := f.st.ListEvidence(context.Background(), store.ListFilter{Limit: 1000})
	require.NoError(t, err)
	require.Empty(t, next)
	var ids []string
	for _, ev := range evs {
		ids = append(ids, ev.ID)
	}
	return ids
}

func hexDigest(seed string) string {
	d := sha256.Sum256([]byte(seed))
	return hex.EncodeToString(d[:])
}

// item is one evidence of a batch, on the stub chain.
func item(seed string) map[string]any {
	return map[string]any{"digest": hexDigest(seed), "chains": []string{"stub"}}
}
