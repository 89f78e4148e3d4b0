package anchor_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

type batchItemJSON struct {
	Index          int              `json:"index"`
	Status         int              `json:"status"`
	ID             string           `json:"id"`
	Created        *bool            `json:"created"`
	EvidenceStatus string           `json:"evidence_status"`
	Error          *apitest.Problem `json:"error"`
}

// batch posts items to POST /v1/evidence/batch and answers its 207's items.
func (f *fixture) batch(t *testing.T, items ...any) []batchItemJSON {
	t.Helper()
	rec := f.postBatch(t, items...)
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	got := apitest.Decode[struct{ Items []batchItemJSON }](t, rec).Items
	require.Len(t, got, len(items))
	for i, it := range got {
		require.Equal(t, i, it.Index, "the answers come in the items' order")
	}
	return got
}

func (f *fixture) postBatch(t *testing.T, items ...any) *httptest.ResponseRecorder {
	t.Helper()
	b, err := json.Marshal(map[string]any{"items": items})
	require.NoError(t, err)
	return f.do(t, http.MethodPost, "/v1/evidence/batch", string(b))
}

func item(seed string, more ...any) map[string]any {
	it := map[string]any{"digest": hexDigest(seed), "chains": []string{"stub"}}
	for i := 0; i+1 < len(more); i += 2 {
		it[more[i].(string)] = more[i+1]
	}
	return it
}

func requireItemTaken(t *testing.T, it batchItemJSON, status int) {
	t.Helper()
	require.Equal(t, status, it.Status, "item %d: %+v", it.Index, it.Error)
	assert.Regexp(t, idPattern, it.ID)
	require.NotNil(t, it.Created)
	assert.Equal(t, status == http.StatusAccepted, *it.Created)
	assert.Nil(t, it.Error)
}

func requireItemRefused(t *testing.T, it batchItemJSON, status int, code, field string) {
	t.Helper()
	require.Equal(t, status, it.Status, "item %d", it.Index)
	require.NotNil(t, it.Error, "item %d", it.Index)
	assert.Equal(t, code, it.Error.Code, "item %d: %s", it.Index, it.Error.Message)
	assert.Equal(t, field, it.Error.Field, "item %d", it.Index)
	// An embedded RFC 9457 problem, as the single endpoint answers it.
	assert.Equal(t, "tag:keeperhq.github.io,2026:problems/"+code, it.Error.Type, "item %d", it.Index)
	assert.NotEmpty(t, it.Error.Title, "item %d", it.Index)
	assert.Equal(t, status, it.Error.Status, "item %d", it.Index)
	assert.Equal(t, it.Error.Message, it.Error.Detail, "item %d", it.Index)
	assert.True(t, strings.HasPrefix(it.Error.Message, field), "item %d: the message names %s: %q", it.Index, field, it.Error.Message)
	assert.Empty(t, it.ID)
}

func TestABatchAnswersEachItemOnItsOwnAndStoresOnlyTheValidOnes(t *testing.T) {
	f := newFixture(t, 100, "stub", "etherlink")
	got := f.batch(t,
		item("first", "metadata", map[string]any{"case": 1}),
		map[string]any{"digest": "abc", "chains": []string{"stub"}},
		item("unknown chain", "chains", []string{"bitcoin"}),
		map[string]any{"content": "aGVsbG8=", "chains": []string{"multi"}, "priority": 1},
		42,
		item("typo", "prority", 3),
		item("wrong type", "priority", "high"),
		map[string]any{"chains": []string{"stub"}},
		item("priority", "priority", 11),
	)

	requireItemTaken(t, got[0], http.StatusAccepted)
	requireItemRefused(t, got[1], 400, "invalid_digest", "items[1].digest")
	assert.Equal(t, "items[1].digest must be a SHA-256 digest: 64 hex characters", got[1].Error.Message)
	requireItemRefused(t, got[2], 400, "unknown_chain", "items[2].chains")
	requireItemTaken(t, got[3], http.StatusAccepted)
	requireItemRefused(t, got[4], 400, "invalid_json", "items[4]")
	requireItemRefused(t, got[5], 400, "unknown_field", "items[5].prority")
	requireItemRefused(t, got[6], 400, "invalid_type", "items[6].priority")
	requireItemRefused(t, got[7], 400, "missing_field", "items[7].digest")
	requireItemRefused(t, got[8], 400, "invalid_priority", "items[8].priority")

	assert.ElementsMatch(t, []string{got[0].ID, got[3].ID}, f.stored(t), "the valid items are stored, nothing of the others")
	first := f.get(t, got[0].ID)
	assert.Equal(t, hexDigest("first"), first.Digest)
	assert.Equal(t, "pending", got[0].EvidenceStatus)
	assert.JSONEq(t, `{"case":1}`, string(first.Metadata))
	content := f.get(t, got[3].ID)
	assert.Equal(t, hexDigest("hello"), content.Digest)
	assert.Equal(t, []string{"etherlink", "stub"}, content.Chains, "multi is every configured chain, as for one evidence")
	assert.Equal(t, 1, content.Priority)
}

func TestABatchOfInvalidItemsOnlyIsStillAnsweredPerItemAndStoresNothing(t *testing.T) {
	f := newFixture(t, 100)
	got := f.batch(t, map[string]any{"digest": "00", "chains": []string{"stub"}}, nil)
	requireItemRefused(t, got[0], 400, "invalid_digest", "items[0].digest")
	requireItemRefused(t, got[1], 400, "invalid_json", "items[1]")
	assert.Empty(t, f.stored(t))
}

func TestBatchIdempotencyKeysArePerItemAcrossRequestsAndWithinOne(t *testing.T) {
	f := newFixture(t, 100)
	earlier := f.batch(t, item("a", "idempotency_key", "order-1"))
	requireItemTaken(t, earlier[0], http.StatusAccepted)

	got := f.batch(t,
		item("a", "idempotency_key", "order-1"), // a replay of the earlier request
		item("b", "idempotency_key", "order-2"),
		item("b", "idempotency_key", "order-2"), // the same key twice in one request
		item("c", "idempotency_key", "order-1"), // the key with another digest
		item("c"),
	)

	requireItemTaken(t, got[0], http.StatusOK)
	assert.Equal(t, earlier[0].ID, got[0].ID)
	requireItemTaken(t, got[1], http.StatusAccepted)
	requireItemTaken(t, got[2], http.StatusOK)
	assert.Equal(t, got[1].ID, got[2].ID, "the second use answers the first's evidence")
	requireItemRefused(t, got[3], http.StatusUnprocessableEntity, "idempotency_conflict", "items[3].idempotency_key")
	assert.Contains(t, got[3].Error.Message, earlier[0].ID)
	requireItemTaken(t, got[4], http.StatusAccepted)
	assert.ElementsMatch(t, []string{earlier[0].ID, got[1].ID, got[4].ID}, f.stored(t))

	// The single endpoint knows the batch's keys, and the batch the single's.
	single := f.post(t, item("b", "idempotency_key", "order-2"))
	require.Equal(t, http.StatusOK, single.Code, single.Body.String())
	assert.Equal(t, got[1].ID, apitest.Decode[api.Evidence](t, single).ID)
	require.Equal(t, http.StatusAccepted, f.post(t, item("d", "idempotency_key", "order-3")).Code)
	requireItemTaken(t, f.batch(t, item("d", "idempotency_key", "order-3"))[0], http.StatusOK)
}

func TestABatchOfAThousandItemsIsStoredAndOneOfMoreIsRefusedWhole(t *testing.T) {
	f := newFixture(t, 100_000)
	items := make([]any, 1001)
	for i := range items {
		items[i] = item(fmt.Sprint("many ", i))
	}
	rec := f.postBatch(t, items...)
	apitest.RequireRefused(t, rec, http.StatusBadRequest, "too_many_items", "items")
	assert.Contains(t, apitest.Decode[apitest.Problem](t, rec).Message, "1000")
	assert.Empty(t, f.stored(t))

	got := f.batch(t, items[:1000]...)
	ids := map[string]bool{}
	for _, it := range got {
		requireItemTaken(t, it, http.StatusAccepted)
		ids[it.ID] = true
	}
	assert.Len(t, ids, 1000)
	assert.Equal(t, 1000, f.pendingCount(t))
}

func TestABatchRefusedWholeStoresNothing(t *testing.T) {
	f := newFixture(t, 100)
	f.anchor.MaxBatchBodyBytes = 4096
	f.serve(t)
	valid := `{"items":[{"digest":"` + hexDigest("x") + `","chains":["stub"]}]}`
	for _, c := range []struct {
		name, body string
		header     map[string]string
		status     int
		code       string
		field      string
	}{
		{"a body that is not JSON", `{"items":[`, nil, 400, "invalid_json", ""},
		{"no items", `{}`, nil, 400, "missing_field", "items"},
		{"an empty list", `{"items":[]}`, nil, 400, "missing_field", "items"},
		{"items that are no list", `{"items":{"digest":"x"}}`, nil, 400, "invalid_type", "items"},
		{"an unknown field beside items", `{"items":[],"chains":["stub"]}`, nil, 400, "unknown_field", "chains"},
		{"items given twice", `{"items":[],"items":[]}`, nil, 400, "duplicate_field", "items"},
		{"an Idempotency-Key header", valid, map[string]string{"Idempotency-Key": "k"}, 400, "invalid_idempotency_key", "Idempotency-Key"},
		{"a body over the batch limit", `{"items":[` + strings.Repeat(`{"digest":"`+hexDigest("x")+`","chains":["stub"]},`, 60) + `1]}`, nil, 413, "body_too_large", ""},
		{"a form", valid, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "unsupported_media_type", "Content-Type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			apitest.RequireRefused(t, f.doWith(t, http.MethodPost, "/v1/evidence/batch", c.body, c.header), c.status, c.code, c.field)
		})
	}
	f.api.Drain()
	apitest.RequireRefused(t, f.do(t, http.MethodPost, "/v1/evidence/batch", valid), http.StatusServiceUnavailable, "draining", "")
	assert.Empty(t, f.stored(t))
}

func TestWhileOverloadedBatchItemsOfPriority6To10Get429AndTheOthersAreStored(t *testing.T) {
	f := newFixture(t, 1)
	earlier := f.batch(t, item("before", "priority", 7, "idempotency_key", "k-7"))
	requireItemTaken(t, earlier[0], http.StatusAccepted)

	rec := f.postBatch(t,
		item("low", "priority", 8),
		item("high", "priority", 2),
		item("before", "priority", 7, "idempotency_key", "k-7"), // a replay still answers its evidence
		item("keyed", "priority", 2, "idempotency_key", "k-8"),
		item("keyed", "priority", 2, "idempotency_key", "k-8"),
	)
	require.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String())
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	got := apitest.Decode[struct{ Items []batchItemJSON }](t, rec).Items
	requireItemRefused(t, got[0], 429, "overloaded", "items[0].priority")
	requireItemTaken(t, got[1], http.StatusAccepted)
	requireItemTaken(t, got[2], http.StatusOK)
	assert.Equal(t, earlier[0].ID, got[2].ID)
	requireItemTaken(t, got[3], http.StatusAccepted)
	requireItemTaken(t, got[4], http.StatusOK)
	assert.ElementsMatch(t, []string{earlier[0].ID, got[1].ID, got[3].ID}, f.stored(t))
}

func TestMetricsCountABatchsItemsAsIntakeAnswers(t *testing.T) {
	f := newFixture(t, 100)
	f.submit(t, "single", 5)
	f.batch(t, item("one"), item("two"), map[string]any{"chains": []string{"stub"}})
	apitest.RequireRefused(t, f.do(t, http.MethodPost, "/v1/evidence/batch", `{}`), 400, "missing_field", "items")

	body := f.do(t, http.MethodGet, "/metrics", "").Body.String()
	assert.Contains(t, body, `keeper_intake_requests_total{code="202"} 3`, "one per evidence taken in, single or in a batch")
	assert.Contains(t, body, `keeper_intake_requests_total{code="400"} 2`, "the invalid item, and the batch refused whole")
	assert.Contains(t, body, "keeper_intake_duration_seconds_count 1", "the single endpoint's latency stays its own")
	assert.Contains(t, body, "keeper_intake_batch_duration_seconds_count 2")
	assert.Contains(t, body, "keeper_evidence_pending 3")
}

// BenchmarkBulkIntake measures evidence accepted per second through POST
// /v1/evidence/batch over HTTP on loopback: requests of 1,000 evidence on
// two chains each, from four clients at once, into an SQLite store.
func BenchmarkBulkIntake(b *testing.B) {
	st := storetest.SQLite(b)
	api := &starter.API{Store: st, Logger: slog.New(slog.DiscardHandler), Features: []starter.Feature{
		&anchor.HTTP{Store: st, Chains: []string{"etherlink", "solana"}, MaxPending: 1 << 30, Logger: slog.New(slog.DiscardHandler)},
	}}
	srv := httptest.NewServer(api.Handler())
	defer srv.Close()

	const clients, perRequest = 4, 1000
	bodies := make([][]byte, clients)
	for c := range bodies {
		items := make([]string, perRequest)
		for i := range items {
			items[i] = fmt.Sprintf(`{"digest":"%s","chains":["etherlink","solana"],"metadata":{"n":%d}}`, hexDigest(fmt.Sprint(c, "/", i)), i)
		}
		bodies[c] = []byte(`{"items":[` + strings.Join(items, ",") + `]}`)
	}
	var (
		wg   sync.WaitGroup
		next = make(chan struct{})
	)
	b.ResetTimer()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range next {
				resp, err := http.Post(srv.URL+"/v1/evidence/batch", "application/json", bytes.NewReader(bodies[c]))
				if err != nil {
					b.Error(err)
					continue
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusMultiStatus || strings.Count(string(raw), `"status":202`) != perRequest {
					b.Errorf("answer %d: %.300s", resp.StatusCode, raw)
				}
			}
		}()
	}
	for range b.N {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	b.ReportMetric(float64(b.N*perRequest)/b.Elapsed().Seconds(), "evidence/s")
}
