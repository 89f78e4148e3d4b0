package settlement_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/settlement"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func newLedger(t *testing.T) (*store.Store, *settlement.Client, *httptest.Server) {
	t.Helper()
	st := storetest.SQLite(t)
	srv := httptest.NewServer((&settlement.Server{Store: st}).Handler())
	t.Cleanup(srv.Close)
	return st, &settlement.Client{BaseURL: srv.URL, HTTP: srv.Client()}, srv
}

func TestARepeatedKeyWithTheSameBodyAnswersTheOriginalRecord(t *testing.T) {
	st, c, _ := newLedger(t)
	ctx := context.Background()
	in := settlement.Intent{Epoch: "e1", Account: "alice", Amount: "334"}
	first, replayed, err := c.Submit(ctx, settlement.Key("e1", "alice"), in)
	require.NoError(t, err)
	assert.False(t, replayed)
	again, replayed, err := c.Submit(ctx, settlement.Key("e1", "alice"), in)
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
	_, _, err := c.Submit(ctx, "epoch-e1-alice", settlement.Intent{Epoch: "e1", Account: "alice", Amount: "334"})
	require.NoError(t, err)
	_, _, err = c.Submit(ctx, "epoch-e1-alice", settlement.Intent{Epoch: "e1", Account: "alice", Amount: "335"})
	var le *settlement.Error
	require.True(t, errors.As(err, &le), "got %v", err)
	assert.Equal(t, http.StatusUnprocessableEntity, le.Status)
	assert.Equal(t, "idempotency_key_reused", le.Code)
	assert.False(t, le.Temporary(), "asking again cannot help")
}

func TestTheSameIntentWrittenDifferentlyIsTheSameBody(t *testing.T) {
	_, c, srv := newLedger(t)
	_, _, err := c.Submit(context.Background(), "k1", settlement.Intent{Epoch: "e", Account: "a", Amount: "7"})
	require.NoError(t, err)
	req, _ := http.NewRequest("POST", srv.URL+"/ledger/v1/intents", strings.NewReader(`{ "amount": "007", "account": "a", "epoch": "e" }`))
	req.Header.Set(settlement.KeyHeader, "k1")
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "true", resp.Header.Get(settlement.ReplayedHeader))
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
			req.Header.Set(settlement.KeyHeader, c.key)
		}
		resp, err := srv.Client().Do(req)
		require.NoError(t, err)
		var e settlement.Error
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
	c := &settlement.Client{BaseURL: "http://builtin", HTTP: settlement.InProcess((&settlement.Server{Store: st}).Handler())}
	ctx := context.Background()
	_, replayed, err := c.Submit(ctx, "k", settlement.Intent{Epoch: "e", Account: "a", Amount: "1"})
	require.NoError(t, err)
	assert.False(t, replayed)
	_, replayed, err = c.Submit(ctx, "k", settlement.Intent{Epoch: "e", Account: "a", Amount: "1"})
	require.NoError(t, err)
	assert.True(t, replayed)
	_, _, err = c.Submit(ctx, "k", settlement.Intent{Epoch: "e", Account: "a", Amount: "2"})
	assert.False(t, settlement.IsTemporary(err))
}

func TestAnUnavailableLedgerIsWorthAskingAgain(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "maintenance", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	c := &settlement.Client{BaseURL: srv.URL, HTTP: srv.Client()}
	_, _, err := c.Submit(context.Background(), "k", settlement.Intent{Epoch: "e", Account: "a", Amount: "1"})
	require.Error(t, err)
	assert.True(t, settlement.IsTemporary(err))
	assert.Contains(t, err.Error(), "503")
}

func jsonDecode(resp *http.Response, v any) error {
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// postIntent posts body under the Idempotency-Key header value key.
func postIntent(t *testing.T, srv *httptest.Server, key, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", srv.URL+"/ledger/v1/intents", strings.NewReader(body))
	req.Header.Set(settlement.KeyHeader, key)
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	return resp
}

func TestTheLedgerTakesAKeyBareOrAsAStructuredFieldString(t *testing.T) {
	st, _, srv := newLedger(t)
	body := `{"epoch":"e1","account":"alice","amount":"5"}`
	first := postIntent(t, srv, "epoch-e1-alice", body)
	first.Body.Close()
	require.Equal(t, http.StatusCreated, first.StatusCode)

	quoted := postIntent(t, srv, `"epoch-e1-alice"`, body)
	var rec settlement.Record
	require.NoError(t, jsonDecode(quoted, &rec))
	assert.Equal(t, http.StatusOK, quoted.StatusCode, "the draft's form names the same intent")
	assert.Equal(t, "true", quoted.Header.Get(settlement.ReplayedHeader))
	assert.Equal(t, "epoch-e1-alice", rec.IdempotencyKey)

	for _, bad := range []string{`"epoch-e1-alice`, `""`, `"a" ;x=1`} {
		resp := postIntent(t, srv, bad, `{"epoch":"e1","account":"bob","amount":"5"}`)
		var e settlement.Error
		require.NoError(t, jsonDecode(resp, &e))
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode, bad)
		assert.Equal(t, "invalid_idempotency_key", e.Code, bad)
	}
	held, err := st.LedgerIntents(context.Background(), "e1", "", 10)
	require.NoError(t, err)
	assert.Len(t, held, 1)
}

func TestTheLedgersErrorsAreProblemDetailsThatKeepTheirCode(t *testing.T) {
	_, _, srv := newLedger(t)
	postIntent(t, srv, "k", `{"epoch":"e","account":"a","amount":"1"}`).Body.Close()
	resp := postIntent(t, srv, `"k"`, `{"epoch":"e","account":"a","amount":"2"}`)
	assert.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	assert.Equal(t, "application/problem+json", resp.Header.Get("Content-Type"))
	var p map[string]any
	require.NoError(t, jsonDecode(resp, &p))
	assert.Equal(t, "tag:keeperhq.github.io,2026:problems/idempotency_key_reused", p["type"])
	assert.Equal(t, "Idempotency key reused", p["title"])
	assert.Equal(t, float64(422), p["status"])
	assert.Equal(t, "idempotency_key_reused", p["code"])
	assert.Equal(t, "Idempotency-Key", p["field"])
	assert.Equal(t, p["message"], p["detail"])
	assert.Contains(t, p["detail"], "a different intent needs a different key")
}

func TestConcurrentIntentsUnderOneKeyStoreOne(t *testing.T) {
	st, c, _ := newLedger(t)
	in := settlement.Intent{Epoch: "e1", Account: "alice", Amount: "9"}
	const n = 16
	replays := make(chan bool, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, replayed, err := c.Submit(context.Background(), "epoch-e1-alice", in)
			assert.NoError(t, err)
			replays <- replayed
		})
	}
	wg.Wait()
	close(replays)
	created := 0
	for r := range replays {
		if !r {
			created++
		}
	}
	assert.Equal(t, 1, created, "one request made the intent; the others were answered with it")
	held, err := st.LedgerIntents(context.Background(), "e1", "", 10)
	require.NoError(t, err)
	require.Len(t, held, 1)
	assert.Equal(t, n-1, held[0].Replays)
}
