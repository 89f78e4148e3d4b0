package ledger_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/ledger"
	"github.com/keeperhq/keeper/store"
)

func newLedger(t *testing.T) (*store.Store, *ledger.Client, *httptest.Server) {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "keeper.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	srv := httptest.NewServer((&ledger.Server{Store: st}).Handler())
	t.Cleanup(srv.Close)
	return st, &ledger.Client{BaseURL: srv.URL, HTTP: srv.Client()}, srv
}

func TestARepeatedKeyWithTheSameBodyAnswersTheOriginalRecord(t *testing.T) {
	st, c, _ := newLedger(t)
	ctx := context.Background()
	in := ledger.Intent{Epoch: "e1", Account: "alice", Amount: "334"}
	first, replayed, err := c.Submit(ctx, ledger.Key("e1", "alice"), in)
	require.NoError(t, err)
	assert.False(t, replayed)
	again, replayed, err := c.Submit(ctx, ledger.Key("e1", "alice"), in)
	require.NoError(t, err)
	assert.True(t, replayed)
	assert.Equal(t, first, again, "the original record, not a new one")

	held, err := st.LedgerIntents(ctx, "e1", "", 10)
	require.NoError(t, err)
	require.Len(t, held, 1)
	assert.Equal(t, 1, held[0].Replays)
}

func TestARepeatedKeyWithADifferentBodyIsRefusedWith422(t *testing.T) {
	_, c, _ := newLedger(t)
	ctx := context.Background()
	_, _, err := c.Submit(ctx, "epoch-e1-alice", ledger.Intent{Epoch: "e1", Account: "alice", Amount: "334"})
	require.NoError(t, err)
	_, _, err = c.Submit(ctx, "epoch-e1-alice", ledger.Intent{Epoch: "e1", Account: "alice", Amount: "335"})
	var le *ledger.Error
	require.True(t, errors.As(err, &le), "got %v", err)
	assert.Equal(t, http.StatusUnprocessableEntity, le.Status)
	assert.Equal(t, "idempotency_key_reused", le.Code)
	assert.False(t, le.Temporary(), "asking again cannot help")
}

func TestTheSameIntentWrittenDifferentlyIsTheSameBody(t *testing.T) {
	_, c, srv := newLedger(t)
	_, _, err := c.Submit(context.Background(), "k1", ledger.Intent{Epoch: "e", Account: "a", Amount: "7"})
	require.NoError(t, err)
	req, _ := http.NewRequest("POST", srv.URL+"/ledger/v1/intents", strings.NewReader(`{ "amount": "007", "account": "a", "epoch": "e" }`))
	req.Header.Set(ledger.KeyHeader, "k1")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "true", resp.Header.Get(ledger.ReplayedHeader))
}

func TestIntentsWithoutAKeyOrWithABadBodyAreRefused(t *testing.T) {
	st, _, srv := newLedger(t)
	for _, c := range []struct {
		key, body string
		status    int
		code      string
	}{
		{"", `{"epoch":"e","account":"a","amount":"1"}`, 400, "missing_idempotency_key"},
		{"has space", `{"epoch":"e","account":"a","amount":"1"}`, 400, "invalid_idempotency_key"},
		{"k", `{"epoch":"e","account":"a","amount":"-1"}`, 400, "invalid_amount"},
		{"k", `{"epoch":"e","account":"a b","amount":"1"}`, 400, "invalid_account"},
		{"k", `{"epoch":"","account":"a","amount":"1"}`, 400, "invalid_epoch"},
		{"k", `{"epoch":"e","account":"a","amount":"1","memo":"x"}`, 400, "unknown_field"},
		{"k", `{"epoch":"e","account":"a","account":"b","amount":"1"}`, 400, "duplicate_field"},
		{"k", `{"epoch":"e","ACCOUNT":"a","amount":"1"}`, 400, "unknown_field"},
		{"k", `{"epoch":"e","account":"a","amount":1}`, 400, "invalid_type"},
		{"k", `not json`, 400, "invalid_json"},
	} {
		req, _ := http.NewRequest("POST", srv.URL+"/ledger/v1/intents", strings.NewReader(c.body))
		if c.key != "" {
			req.Header.Set(ledger.KeyHeader, c.key)
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		var e ledger.Error
		require.NoError(t, jsonDecode(resp, &e))
		assert.Equal(t, c.status, resp.StatusCode, c.body)
		assert.Equal(t, c.code, e.Code, c.body)
	}
	held, err := st.LedgerIntents(context.Background(), "e", "", 10)
	require.NoError(t, err)
	assert.Empty(t, held)
}

func TestTheInProcessClientSpeaksTheSameProtocol(t *testing.T) {
	st, _, _ := newLedger(t)
	c := &ledger.Client{BaseURL: "http://builtin", HTTP: ledger.InProcess((&ledger.Server{Store: st}).Handler())}
	ctx := context.Background()
	_, replayed, err := c.Submit(ctx, "k", ledger.Intent{Epoch: "e", Account: "a", Amount: "1"})
	require.NoError(t, err)
	assert.False(t, replayed)
	_, replayed, err = c.Submit(ctx, "k", ledger.Intent{Epoch: "e", Account: "a", Amount: "1"})
	require.NoError(t, err)
	assert.True(t, replayed)
	_, _, err = c.Submit(ctx, "k", ledger.Intent{Epoch: "e", Account: "a", Amount: "2"})
	assert.False(t, ledger.IsTemporary(err))
}

func TestAnUnavailableLedgerIsWorthAskingAgain(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c := &ledger.Client{BaseURL: srv.URL, HTTP: srv.Client()}
	_, _, err := c.Submit(context.Background(), "k", ledger.Intent{Epoch: "e", Account: "a", Amount: "1"})
	require.Error(t, err)
	assert.True(t, ledger.IsTemporary(err))
	assert.Contains(t, err.Error(), "503")
}

func jsonDecode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}
