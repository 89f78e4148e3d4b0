package backfill_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func TestMetricsCountEachBackfillUnitApartAndExposeStoredCountsAsGauges(t *testing.T) {
	st := storetest.SQLite(t)
	asIs := func(s string) (string, error) { return s, nil }
	reg := prometheus.NewRegistry()
	reg.MustRegister(&backfill.Collector{Store: st, Networks: []backfill.Network{
		{Name: "etherlink", Unit: "blocks", Parse: asIs},
		{Name: "solana", Unit: "signatures", Parse: asIs},
	}})
	a := &starter.API{Store: st, Registry: reg,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, _, err := st.AddWallet(context.Background(), "w1", []store.NetworkStart{{Network: "etherlink"}, {Network: "solana"}, {Network: "elsewhere"}})
	require.NoError(t, err)

	rec := httptest.NewRecorder()
	a.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	assert.Contains(t, body, `keeper_backfill_items{network="etherlink",status="PENDING"} 1`)
	assert.Contains(t, body, `keeper_backfill_items{network="elsewhere",status="PENDING"} 1`)
	assert.Contains(t, body, `keeper_backfill_scanned_blocks{network="etherlink"} 0`)
	assert.Contains(t, body, `keeper_backfill_target_blocks{network="etherlink"} 0`)
	assert.Contains(t, body, `keeper_backfill_scanned_signatures{network="solana"} 0`)
	assert.NotContains(t, body, `keeper_backfill_scanned_blocks{network="solana"}`, "one quantity per series")
	assert.NotContains(t, body, `network="elsewhere"} 0`, "a network not configured here has no unit, so no progress")
}
