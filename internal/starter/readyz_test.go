package starter_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func TestReadyzDegradedIsOneForAFailingCheckUntilItPassesAgain(t *testing.T) {
	st := storetest.SQLite(t)
	var down atomic.Bool
	api := &starter.API{Store: st,
		Checks: []starter.Check{{Name: "store", Ping: st.Ping}, {Name: "temporal", Ping: func(context.Context) error {
			if down.Load() {
				return errors.New("connection refused")
			}
			return nil
		}}},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	h := api.Handler()
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		return rec
	}

	down.Store(true)
	require.Equal(t, http.StatusServiceUnavailable, get("/readyz").Code)
	metrics := get("/metrics").Body.String()
	assert.Contains(t, metrics, `keeper_readyz_degraded{cause="temporal"} 1`)
	assert.Contains(t, metrics, `keeper_readyz_degraded{cause="store"} 0`)
	assert.Contains(t, metrics, `keeper_readyz_degraded{cause="draining"} 0`)

	down.Store(false)
	require.Equal(t, http.StatusOK, get("/readyz").Code)
	assert.Contains(t, get("/metrics").Body.String(), `keeper_readyz_degraded{cause="temporal"} 0`)

	api.Drain()
	require.Equal(t, http.StatusServiceUnavailable, get("/readyz").Code)
	assert.Contains(t, get("/metrics").Body.String(), `keeper_readyz_degraded{cause="draining"} 1`)
}
