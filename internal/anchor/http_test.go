package anchor_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
)

// fixture serves the evidence routes behind the API's front door (its
// 404s, clean paths and /metrics), over a store, checking every exchange
// against openapi.json.
type fixture struct {
	st     *store.Store
	path   string // the store's SQLite file
	api    *starter.API
	anchor *anchor.HTTP
	h      http.Handler
}

func newFixture(t *testing.T, maxPending int, chains ...string) *fixture {
	t.Helper()
	if len(chains) == 0 {
		chains = []string{"stub"}
	}
	path := filepath.Join(t.TempDir(), "keeper.db")
	st := storetest.Open(t, path)
	f := fixtureOn(t, st, maxPending, chains...)
	f.path = path
	return f
}

// fixtureOn serves the API over st, an open store of either database.
func fixtureOn(t *testing.T, st *store.Store, maxPending int, chains ...string) *fixture {
	t.Helper()
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ev := &anchor.HTTP{Store: st, Chains: chains, MaxPending: maxPending, MaxBodyBytes: 1 << 20, Logger: logger,
		Metrics: anchor.NewIntakeMetrics(chains...)}
	api := &starter.API{Store: st, Checks: []starter.Check{{Name: "store", Ping: st.Ping}}, Logger: logger,
		Features: []starter.Feature{ev}}
	f := &fixture{st: st, api: api, anchor: ev}
	f.serve(t)
	return f
}

// serve (re)builds the handler, once the fixture's settings changed, with
// the evidence metrics on its /metrics as the node registers them.
func (f *fixture) serve(t *testing.T) {
	t.Helper()
	f.h = openapitest.Handler(t, f.handler())
}

// handler is the API's handler, unchecked.
func (f *fixture) handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(f.anchor.Metrics.Collectors()...)
	reg.MustRegister(anchor.NewCollector(f.st, f.anchor.Chains))
	f.api.Registry = reg
	if f.api.Draining == nil {
		f.api.Draining = &httpapi.Drain{}
	}
	f.anchor.Draining = f.api.Draining
	f.anchor.Busy = func() { f.api.CountBusy("evidence") }
	return f.api.Handler()
}

func (f *fixture) do(t *testing.T, method, path, body string) *httptest.ResponseRecorder {
	t.Helper()
	return f.doWith(t, method, path, body, nil)
}

// doWith sends a body as JSON, with header on top.
func (f *fixture) doWith(t *testing.T, method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	return apitest.Do(t, f.h, method, path, body, header)
}

// post sends v as JSON to POST /v1/evidence.
func (f *fixture) post(t *testing.T, v any) *httptest.ResponseRecorder {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return f.do(t, http.MethodPost, "/v1/evidence", string(b))
}

// submit posts a digest and returns the accepted evidence.
func (f *fixture) submit(t *testing.T, seed string, priority int) api.Evidence {
	t.Helper()
	rec := f.post(t, map[string]any{"digest": hexDigest(seed), "chains": []string{"stub"}, "priority": priority})
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	return apitest.Decode[api.Evidence](t, rec)
}

func (f *fixture) get(t *testing.T, id string) api.Evidence {
	t.Helper()
	rec := f.do(t, http.MethodGet, "/v1/evidence/"+id, "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return apitest.Decode[api.Evidence](t, rec)
}

func (f *fixture) pendingCount(t *testing.T) int {
	t.Helper()
	n, err := f.st.PendingCount(context.Background())
	require.NoError(t, err)
	return n
}

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

var idPattern = regexp.MustCompile(`^ev_[0-9a-f]{24}$`)

func TestBadRequestsAreRefusedWithAJSONErrorAndStoreNothing(t *testing.T) {
	f := newFixture(t, 100)
	pending := f.submit(t, "the one the test creates", 5)
	d := hexDigest("x")
	okBody := func(extra string) string { return `{"digest":"` + d + `","chains":["stub"]` + extra + `}` }
	bigMeta := `{"pad":"` + strings.Repeat("m", 17<<10) + `"}`
	tooLarge := okBody(`,"metadata":{"pad":"` + strings.Repeat("b", 1<<20) + `"}`)

	rows := []struct {
		name         string
		method, path string
		body         string
		status       int
		code, field  string
		allow        []string
	}{
		// POST /v1/evidence: the body.
		{"an empty body", "POST", "/v1/evidence", "", 400, "invalid_json", "", nil},
		{"a body of only whitespace", "POST", "/v1/evidence", " \n\t ", 400, "invalid_json", "", nil},
		{"a body that is not JSON", "POST", "/v1/evidence", "digest=abc", 400, "invalid_json", "", nil},
		{"a body that is not UTF-8", "POST", "/v1/evidence", "{\"digest\":\"\xff\xfe\"}", 400, "invalid_json", "", nil},
		{"a JSON array instead of an object", "POST", "/v1/evidence", `[` + okBody("") + `]`, 400, "invalid_json", "", nil},
		{"a JSON string instead of an object", "POST", "/v1/evidence", `"hello"`, 400, "invalid_json", "", nil},
		{"an object cut short", "POST", "/v1/evidence", `{"digest":"` + d, 400, "invalid_json", "", nil},
		{"trailing garbage after the object", "POST", "/v1/evidence", okBody("") + ` garbage`, 400, "invalid_json", "", nil},
		{"a stray brace after the object", "POST", "/v1/evidence", okBody("") + `}`, 400, "invalid_json", "", nil},
		{"two objects", "POST", "/v1/evidence", okBody("") + okBody(""), 400, "invalid_json", "", nil},
		{"an unknown field", "POST", "/v1/evidence", okBody(`,"colour":"red"`), 400, "unknown_field", "colour", nil},
		{"a body over MaxBodyBytes", "POST", "/v1/evidence", tooLarge, 413, "body_too_large", "", nil},
		// digest and content.
		{"a digest one byte short", "POST", "/v1/evidence", `{"digest":"` + d[:62] + `","chains":["stub"]}`, 400, "invalid_digest", "digest", nil},
		{"a digest one byte long", "POST", "/v1/evidence", `{"digest":"` + d + `00","chains":["stub"]}`, 400, "invalid_digest", "digest", nil},
		{"a digest of odd length", "POST", "/v1/evidence", `{"digest":"` + d[:63] + `","chains":["stub"]}`, 400, "invalid_digest", "digest", nil},
		{"a digest that is not hex", "POST", "/v1/evidence", `{"digest":"` + strings.Repeat("zz", 32) + `","chains":["stub"]}`, 400, "invalid_digest", "digest", nil},
		{"a digest that is a number", "POST", "/v1/evidence", `{"digest":123,"chains":["stub"]}`, 400, "invalid_type", "digest", nil},
		{"both digest and content", "POST", "/v1/evidence", okBody(`,"content":"aGVsbG8="`), 400, "conflicting_fields", "digest", nil},
		{"neither digest nor content", "POST", "/v1/evidence", `{"chains":["stub"]}`, 400, "missing_field", "digest", nil},
		{"content that is not base64", "POST", "/v1/evidence", `{"content":"not base64!","chains":["stub"]}`, 400, "invalid_content", "content", nil},
		{"empty content", "POST", "/v1/evidence", `{"content":"","chains":["stub"]}`, 400, "invalid_content", "content", nil},
		// chains.
		{"chains missing", "POST", "/v1/evidence", `{"digest":"` + d + `"}`, 400, "missing_field", "chains", nil},
		{"chains empty", "POST", "/v1/evidence", `{"digest":"` + d + `","chains":[]}`, 400, "missing_field", "chains", nil},
		{"chains null", "POST", "/v1/evidence", `{"digest":"` + d + `","chains":null}`, 400, "missing_field", "chains", nil},
		{"chains a string, not an array", "POST", "/v1/evidence", `{"digest":"` + d + `","chains":"stub"}`, 400, "invalid_type", "chains", nil},
		{"chains an object", "POST", "/v1/evidence", `{"digest":"` + d + `","chains":{"stub":true}}`, 400, "invalid_type", "chains", nil},
		{"chains of numbers", "POST", "/v1/evidence", `{"digest":"` + d + `","chains":[1]}`, 400, "invalid_type", "chains", nil},
		{"an unknown chain", "POST", "/v1/evidence", `{"digest":"` + d + `","chains":["stub","bitcoin"]}`, 400, "unknown_chain", "chains", nil},
		{"a chain listed twice", "POST", "/v1/evidence", `{"digest":"` + d + `","chains":["stub","stub"]}`, 400, "duplicate_chain", "chains", nil},
		// priority.
		{"priority 0", "POST", "/v1/evidence", okBody(`,"priority":0`), 400, "invalid_priority", "priority", nil},
		{"priority 11", "POST", "/v1/evidence", okBody(`,"priority":11`), 400, "invalid_priority", "priority", nil},
		{"priority -1", "POST", "/v1/evidence", okBody(`,"priority":-1`), 400, "invalid_priority", "priority", nil},
		{"priority as a string", "POST", "/v1/evidence", okBody(`,"priority":"5"`), 400, "invalid_type", "priority", nil},
		{"a fractional priority", "POST", "/v1/evidence", okBody(`,"priority":5.5`), 400, "invalid_type", "priority", nil},
		// idempotency_key.
		{"an empty idempotency_key", "POST", "/v1/evidence", okBody(`,"idempotency_key":""`), 400, "invalid_idempotency_key", "idempotency_key", nil},
		{"an idempotency_key of 300 characters", "POST", "/v1/evidence", okBody(`,"idempotency_key":"` + strings.Repeat("k", 300) + `"`), 400, "invalid_idempotency_key", "idempotency_key", nil},
		{"an idempotency_key with a control character", "POST", "/v1/evidence", okBody(`,"idempotency_key":"a\u0007b"`), 400, "invalid_idempotency_key", "idempotency_key", nil},
		{"an idempotency_key that is a number", "POST", "/v1/evidence", okBody(`,"idempotency_key":42`), 400, "invalid_type", "idempotency_key", nil},
		// metadata.
		{"metadata as an array", "POST", "/v1/evidence", okBody(`,"metadata":[1,2]`), 400, "invalid_metadata", "metadata", nil},
		{"metadata as a string", "POST", "/v1/evidence", okBody(`,"metadata":"case 7"`), 400, "invalid_metadata", "metadata", nil},
		{"metadata as a number", "POST", "/v1/evidence", okBody(`,"metadata":7`), 400, "invalid_metadata", "metadata", nil},
		{"metadata over 16 KiB", "POST", "/v1/evidence", okBody(`,"metadata":` + bigMeta), 400, "metadata_too_large", "metadata", nil},
		// GET /v1/evidence (list).
		{"an unknown status", "GET", "/v1/evidence?status=bogus", "", 400, "invalid_status", "status", nil},
		{"limit 0", "GET", "/v1/evidence?limit=0", "", 400, "invalid_limit", "limit", nil},
		{"a negative limit", "GET", "/v1/evidence?limit=-3", "", 400, "invalid_limit", "limit", nil},
		{"limit abc", "GET", "/v1/evidence?limit=abc", "", 400, "invalid_limit", "limit", nil},
		{"limit 5000", "GET", "/v1/evidence?limit=5000", "", 400, "invalid_limit", "limit", nil},
		{"a garbage cursor", "GET", "/v1/evidence?cursor=garbage", "", 400, "invalid_cursor", "cursor", nil},
		{"an unknown query parameter", "GET", "/v1/evidence?sort=desc", "", 400, "unknown_parameter", "sort", nil},
		// GET /v1/evidence/{id}.
		{"an id escaping upwards", "GET", "/v1/evidence/..%2F..%2Fetc%2Fpasswd", "", 400, "invalid_path", "", nil},
		{"a short id", "GET", "/v1/evidence/ev_123", "", 400, "invalid_id", "id", nil},
		{"an id without its prefix", "GET", "/v1/evidence/" + strings.Repeat("0", 27), "", 400, "invalid_id", "id", nil},
		{"an id with an upper-case prefix", "GET", "/v1/evidence/EV_" + strings.Repeat("0", 24), "", 400, "invalid_id", "id", nil},
		{"an id with upper-case hex", "GET", "/v1/evidence/ev_" + strings.Repeat("AB", 12), "", 400, "invalid_id", "id", nil},
		{"an id that is not hex", "GET", "/v1/evidence/ev_" + strings.Repeat("g", 24), "", 400, "invalid_id", "id", nil},
		{"a well-formed unknown id", "GET", "/v1/evidence/ev_000000000000000000000000", "", 404, "not_found", "id", nil},
		// GET /v1/evidence/{id}/receipt.
		{"the receipt of a malformed id", "GET", "/v1/evidence/nope/receipt", "", 400, "invalid_id", "id", nil},
		{"the receipt of an unknown id", "GET", "/v1/evidence/ev_000000000000000000000000/receipt", "", 404, "not_found", "id", nil},
		{"the receipt of a pending evidence", "GET", "/v1/evidence/{pending}/receipt", "", 409, "not_confirmed", "", nil},
		// POST /v1/evidence/{id}/retry.
		{"a retry of a malformed id", "POST", "/v1/evidence/nope/retry", "", 400, "invalid_id", "id", nil},
		{"a retry of an unknown id", "POST", "/v1/evidence/ev_000000000000000000000000/retry", "", 404, "not_found", "id", nil},
		{"a retry of an evidence that is not dead-lettered", "POST", "/v1/evidence/{pending}/retry", "", 409, "not_dead_lettered", "", nil},
		{"a key that matches a field only when case is ignored", "POST", "/v1/evidence", `{"DIGEST":"` + d + `","chains":["stub"]}`, 400, "unknown_field", "DIGEST", nil},
		{"a duplicate key", "POST", "/v1/evidence", `{"digest":"` + d + `","chains":["stub"],"chains":["stub"]}`, 400, "duplicate_field", "chains", nil},
		{"a null body", "POST", "/v1/evidence", `null`, 400, "invalid_json", "", nil},
		{"multi listed twice", "POST", "/v1/evidence", `{"digest":"` + d + `","chains":["multi","multi"]}`, 400, "duplicate_chain", "chains", nil},
		{"a path with dot-dot segments", "GET", "/v1/evidence/../../etc/passwd", "", 400, "invalid_path", "", nil},
		{"a path with an empty segment", "GET", "/v1//evidence", "", 400, "invalid_path", "", nil},
		// Unknown routes.
		{"an unknown route", "GET", "/v2/evidence", "", 404, "not_found", "", nil},
		{"the root", "GET", "/", "", 404, "not_found", "", nil},
		{"an unknown sub-resource", "GET", "/v1/evidence/{pending}/proof", "", 404, "not_found", "", nil},
		// Wrong methods.
		{"DELETE on the collection", "DELETE", "/v1/evidence", "", 405, "method_not_allowed", "", []string{"GET", "HEAD", "POST"}},
		{"PUT on an evidence", "PUT", "/v1/evidence/{pending}", okBody(""), 405, "method_not_allowed", "", []string{"GET", "HEAD"}},
		{"DELETE on an evidence", "DELETE", "/v1/evidence/{pending}", "", 405, "method_not_allowed", "", []string{"GET", "HEAD"}},
		{"POST on a receipt", "POST", "/v1/evidence/{pending}/receipt", "", 405, "method_not_allowed", "", []string{"GET", "HEAD"}},
		{"GET on retry", "GET", "/v1/evidence/{pending}/retry", "", 405, "method_not_allowed", "", []string{"POST"}},
		{"POST on /health", "POST", "/health", "", 405, "method_not_allowed", "", []string{"GET", "HEAD"}},
	}
	require.GreaterOrEqual(t, len(rows), 30)

	for _, row := range rows {
		t.Run(row.name+" is refused", func(t *testing.T) {
			rec := f.do(t, row.method, strings.ReplaceAll(row.path, "{pending}", pending.ID), row.body)
			apitest.RequireRefused(t, rec, row.status, row.code, row.field)
			if row.allow != nil {
				allow := strings.Split(rec.Header().Get("Allow"), ", ")
				sort.Strings(allow)
				assert.Equal(t, row.allow, allow, "Allow header")
			}
		})
	}

	assert.Equal(t, []string{pending.ID}, f.stored(t), "no bad request stored anything")
	assert.Equal(t, 1, f.pendingCount(t))
	assert.Equal(t, "pending", f.get(t, pending.ID).Status)
}

func TestPostingADigestAcceptsPendingEvidenceAndSaysWhereItLives(t *testing.T) {
	f := newFixture(t, 100)
	d := hexDigest("report.pdf")
	rec := f.post(t, map[string]any{"digest": d, "chains": []string{"stub"}})
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	ev := apitest.Decode[api.Evidence](t, rec)

	assert.Regexp(t, idPattern, ev.ID)
	assert.Equal(t, "/v1/evidence/"+ev.ID, rec.Header().Get("Location"))
	assert.Equal(t, "pending", ev.Status)
	assert.Equal(t, d, ev.Digest)
	assert.Equal(t, []string{"stub"}, ev.Chains)
	assert.Equal(t, 5, ev.Priority, "default priority")
	assert.Nil(t, ev.Receipt)
	require.Len(t, ev.Anchors, 1)
	assert.Equal(t, "stub", ev.Anchors[0].Chain)
	assert.Equal(t, "pending", ev.Anchors[0].Status)

	got := f.get(t, ev.ID)
	assert.Equal(t, ev.ID, got.ID)
	assert.Equal(t, d, got.Digest)
	assert.Equal(t, "pending", got.Status)

	stored, err := f.st.GetEvidence(context.Background(), ev.ID)
	require.NoError(t, err)
	assert.Equal(t, d, hex.EncodeToString(stored.Digest[:]))
	assert.Equal(t, 5, stored.Priority)
}

func TestAnAcceptedEvidenceSaysWhereItsTimeWentAsServerTiming(t *testing.T) {
	f := newFixture(t, 100)
	rec := f.post(t, map[string]any{"digest": hexDigest("timed"), "chains": []string{"stub"}})
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())

	took := map[string]float64{}
	for _, m := range strings.Split(rec.Header().Get("Server-Timing"), ", ") {
		name, dur, ok := strings.Cut(m, ";dur=")
		require.True(t, ok, "metric %q has a duration", m)
		ms, err := strconv.ParseFloat(dur, 64)
		require.NoError(t, err)
		took[name] = ms
	}
	require.ElementsMatch(t, []string{"read", "admit", "queue", "writer", "commit", "app"}, slices.Collect(maps.Keys(took)))
	assert.Positive(t, took["commit"], "a real commit takes time")
	assert.GreaterOrEqual(t, took["app"], took["read"]+took["admit"]+took["queue"]+took["writer"]+took["commit"], "the steps are parts of the whole")

	bad := f.post(t, map[string]any{"digest": "nope", "chains": []string{"stub"}})
	require.Equal(t, http.StatusBadRequest, bad.Code)
	assert.Empty(t, bad.Header().Get("Server-Timing"), "only a stored evidence's answer has store steps to tell")
}

func TestAnUpperCaseDigestIsStoredInLowerCase(t *testing.T) {
	f := newFixture(t, 100)
	d := hexDigest("x")
	rec := f.post(t, map[string]any{"digest": strings.ToUpper(d), "chains": []string{"stub"}, "priority": 1})
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	ev := apitest.Decode[api.Evidence](t, rec)
	assert.Equal(t, d, ev.Digest)
	assert.Equal(t, 1, ev.Priority)
}

func TestPostingContentStoresTheSHA256OfTheDecodedContent(t *testing.T) {
	f := newFixture(t, 100)
	content := []byte("the signed contract, version 3\n\x00\x01\x02")
	rec := f.post(t, map[string]any{"content": base64.StdEncoding.EncodeToString(content), "chains": []string{"stub"}})
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	ev := apitest.Decode[api.Evidence](t, rec)

	want := sha256.Sum256(content)
	assert.Equal(t, hex.EncodeToString(want[:]), ev.Digest)
	stored, err := f.st.GetEvidence(context.Background(), ev.ID)
	require.NoError(t, err)
	assert.Equal(t, want, stored.Digest)
}

func TestTheSameIdempotencyKeyTwiceAnswersTheFirstEvidenceAndStoresOne(t *testing.T) {
	f := newFixture(t, 100)
	body := map[string]any{"digest": hexDigest("a"), "chains": []string{"stub"}, "idempotency_key": "upload-7f3a"}
	first := f.post(t, body)
	require.Equal(t, http.StatusAccepted, first.Code, first.Body.String())
	second := f.post(t, body)
	require.Equal(t, http.StatusOK, second.Code, second.Body.String())

	a, b := apitest.Decode[api.Evidence](t, first), apitest.Decode[api.Evidence](t, second)
	assert.Equal(t, a.ID, b.ID)
	assert.Equal(t, "upload-7f3a", b.IdempotencyKey)
	assert.Equal(t, "/v1/evidence/"+a.ID, second.Header().Get("Location"))
	assert.Equal(t, []string{a.ID}, f.stored(t))
	assert.Equal(t, 1, f.pendingCount(t))
}

func TestMultiAsksForEveryConfiguredChain(t *testing.T) {
	f := newFixture(t, 100, "stub", "eth", "sol")
	rec := f.post(t, map[string]any{"digest": hexDigest("a"), "chains": []string{"multi"}})
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	ev := apitest.Decode[api.Evidence](t, rec)
	assert.Equal(t, []string{"eth", "sol", "stub"}, ev.Chains)
	assert.Len(t, ev.Anchors, 3)

	pending, err := f.st.PendingChains(context.Background())
	require.NoError(t, err)
	for _, c := range []string{"eth", "sol", "stub"} {
		assert.Equal(t, 1, pending[c].Count, "outbox row on %s", c)
	}
}

func TestMetadataRoundTrips(t *testing.T) {
	f := newFixture(t, 100)
	meta := `{"case":"A-17","pages":[1,2,3],"signed":{"by":"Zoë","at":"2024-05-01T10:00:00Z"},"note":null}`
	rec := f.do(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest("m")+`","chains":["stub"],"metadata":`+meta+`}`)
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	ev := apitest.Decode[api.Evidence](t, rec)
	assert.JSONEq(t, meta, string(ev.Metadata))
	assert.JSONEq(t, meta, string(f.get(t, ev.ID).Metadata))

	list := apitest.Decode[api.EvidencePage](t, f.do(t, "GET", "/v1/evidence", ""))
	require.Len(t, list.Items, 1)
	assert.JSONEq(t, meta, string(list.Items[0].Metadata))
}

func TestWhenTheQueueIsFullOnlyLowPriorityEvidenceIsRefused(t *testing.T) {
	f := newFixture(t, 3)
	for i := range 3 {
		f.submit(t, fmt.Sprint("queued", i), 5)
	}

	rec := f.post(t, map[string]any{"digest": hexDigest("low"), "chains": []string{"stub"}, "priority": 6})
	require.Equal(t, http.StatusTooManyRequests, rec.Code, rec.Body.String())
	assert.NotEmpty(t, rec.Header().Get("Retry-After"))
	e := apitest.Decode[apitest.Problem](t, rec)
	assert.Equal(t, "overloaded", e.Code)
	assert.NotEmpty(t, e.Message)
	assert.Equal(t, 3, f.pendingCount(t), "the refused evidence was not stored")

	rec = f.post(t, map[string]any{"digest": hexDigest("lowest"), "chains": []string{"stub"}, "priority": 10})
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)

	for _, p := range []int{5, 1} {
		rec := f.post(t, map[string]any{"digest": hexDigest(fmt.Sprint("urgent", p)), "chains": []string{"stub"}, "priority": p})
		assert.Equal(t, http.StatusAccepted, rec.Code, "priority %d: %s", p, rec.Body.String())
	}
	// Omitting the priority means 5, which is still accepted.
	rec = f.post(t, map[string]any{"digest": hexDigest("default"), "chains": []string{"stub"}})
	assert.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	assert.Equal(t, 6, f.pendingCount(t))

	// Once the queue drains into batches, priority 6 is accepted again.
	_, ok, err := f.st.FormBatch(context.Background(), "stub", 100)
	require.NoError(t, err)
	require.True(t, ok)
	rec = f.post(t, map[string]any{"digest": hexDigest("low"), "chains": []string{"stub"}, "priority": 6})
	assert.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
}

func TestADrainingAPIRefusesIntakeButKeepsAnsweringReads(t *testing.T) {
	f := newFixture(t, 100)
	ev := f.submit(t, "before drain", 5)
	rec := f.do(t, "GET", "/readyz", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, true, apitest.Decode[map[string]any](t, rec)["ready"])

	f.api.Drain()

	rec = f.post(t, map[string]any{"digest": hexDigest("after drain"), "chains": []string{"stub"}, "priority": 1})
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	assert.Equal(t, "draining", apitest.Decode[apitest.Problem](t, rec).Code)
	assert.NotEmpty(t, rec.Header().Get("Retry-After"))
	assert.Equal(t, []string{ev.ID}, f.stored(t))

	assert.Equal(t, ev.ID, f.get(t, ev.ID).ID)
	rec = f.do(t, "GET", "/v1/evidence", "")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Len(t, apitest.Decode[api.EvidencePage](t, rec).Items, 1)

	rec = f.do(t, "GET", "/readyz", "")
	require.Equal(t, http.StatusServiceUnavailable, rec.Code, rec.Body.String())
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"), "the readiness answer, not an error")
	var ready map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &ready))
	assert.Equal(t, false, ready["ready"])
	assert.Contains(t, ready["checks"], "draining")

	rec = f.do(t, "GET", "/health", "")
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok", apitest.Decode[map[string]any](t, rec)["status"])
}

func TestListingPagesThroughEveryEvidenceOnceAndFiltersByStatus(t *testing.T) {
	f := newFixture(t, 100)
	var ids []string
	for i := range 5 {
		ids = append(ids, f.submit(t, fmt.Sprint("page", i), 5).ID)
	}

	var got []string
	var sizes []int
	cursor := ""
	for page := 0; ; page++ {
		require.Less(t, page, 5, "pagination does not end")
		path := "/v1/evidence?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		rec := f.do(t, "GET", path, "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		l := apitest.Decode[api.EvidencePage](t, rec)
		sizes = append(sizes, len(l.Items))
		for _, it := range l.Items {
			got = append(got, it.ID)
		}
		if l.NextCursor == "" {
			break
		}
		cursor = l.NextCursor
	}
	assert.Equal(t, []int{2, 2, 1}, sizes)
	assert.Equal(t, ids, got, "every evidence exactly once, in intake order")

	// An empty store lists no items rather than null.
	empty := newFixture(t, 100)
	rec := empty.do(t, "GET", "/v1/evidence?status=pending", "")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.JSONEq(t, `{"items":[],"next_cursor":""}`, rec.Body.String())

	// Dead-letter the oldest one through a batch of its own.
	ctx := context.Background()
	b, ok, err := f.st.FormBatch(ctx, "stub", 1)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, f.st.DeadLetterBatch(ctx, b.ID, "stub: permanently rejected"))

	rec = f.do(t, "GET", "/v1/evidence?status=dead_letter", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	dead := apitest.Decode[api.EvidencePage](t, rec)
	require.Len(t, dead.Items, 1)
	assert.Equal(t, ids[0], dead.Items[0].ID)
	assert.Equal(t, "dead_letter", dead.Items[0].Status)
	assert.Equal(t, "stub: permanently rejected", dead.Items[0].LastError)
	assert.Empty(t, dead.NextCursor)

	rec = f.do(t, "GET", "/v1/evidence?status=pending&limit=10", "")
	require.Equal(t, http.StatusOK, rec.Code)
	var pendingIDs []string
	for _, it := range apitest.Decode[api.EvidencePage](t, rec).Items {
		pendingIDs = append(pendingIDs, it.ID)
	}
	assert.Equal(t, ids[1:], pendingIDs)

	// Retry puts it back in the queue.
	rec = f.do(t, "POST", "/v1/evidence/"+ids[0]+"/retry", "")
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	retried := apitest.Decode[api.Evidence](t, rec)
	assert.Equal(t, ids[0], retried.ID)
	assert.Equal(t, "pending", retried.Status)
	assert.Empty(t, retried.LastError)

	stored, err := f.st.GetEvidence(ctx, ids[0])
	require.NoError(t, err)
	assert.Equal(t, store.StatusPending, stored.Status)
	assert.Equal(t, 5, f.pendingCount(t))
	rec = f.do(t, "GET", "/v1/evidence?status=dead_letter", "")
	assert.Empty(t, apitest.Decode[api.EvidencePage](t, rec).Items)

	// A second retry is refused: it is no longer dead-lettered.
	rec = f.do(t, "POST", "/v1/evidence/"+ids[0]+"/retry", "")
	assert.Equal(t, http.StatusConflict, rec.Code)
	assert.Equal(t, "not_dead_lettered", apitest.Decode[apitest.Problem](t, rec).Code)
}

func TestAConfirmedEvidenceHasAReceiptWhoseProofChecks(t *testing.T) {
	f := newFixture(t, 100)
	ctx := context.Background()
	var evs []api.Evidence
	for i := range 3 {
		evs = append(evs, f.submit(t, fmt.Sprint("receipt", i), 5))
	}

	b, ok, err := f.st.FormBatch(ctx, "stub", 10)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, 3, b.Size)
	leaves, err := f.st.BatchLeaves(ctx, b.ID)
	require.NoError(t, err)
	tree, err := merkle.Build(leaves)
	require.NoError(t, err)
	paths := tree.Paths()
	blockTime := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	require.NoError(t, f.st.MarkSubmitted(ctx, b.ID, tree.Root(), "0xfeed"))

	rec := f.do(t, "GET", "/v1/evidence/"+evs[0].ID+"/receipt", "")
	assert.Equal(t, http.StatusConflict, rec.Code, "no receipt while only submitted")
	sub := f.get(t, evs[0].ID)
	assert.Equal(t, "submitted", sub.Status)
	require.Len(t, sub.Anchors, 1)
	assert.Equal(t, "0xfeed", sub.Anchors[0].TxRef)

	require.NoError(t, f.st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: "0xfeed", Block: 42, BlockTime: blockTime,
		Network: "eip155:42793", BlockHash: "0xb10c", Finality: "finalized"}))

	root := tree.Root()
	for _, ev := range evs {
		rec := f.do(t, "GET", "/v1/evidence/"+ev.ID+"/receipt", "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		r, err := receipt.Parse(rec.Body.Bytes())
		require.NoError(t, err)
		assert.Equal(t, ev.ID, r.EvidenceID)
		assert.Equal(t, ev.Digest, r.Digest)
		require.Len(t, r.Anchors, 1)
		a := r.Anchors[0]
		assert.Equal(t, "stub", a.Chain)
		assert.Equal(t, 3, a.TreeSize)
		assert.Equal(t, hex.EncodeToString(root[:]), a.Root)
		assert.Equal(t, "0xfeed", a.TxRef)
		assert.Equal(t, uint64(42), a.Block)
		assert.True(t, blockTime.Equal(a.BlockTime))
		assert.Equal(t, receipt.VersionSalted, r.Version, "anchors of batch roots (no evidence log here) make version 2 receipts")
		assert.Len(t, r.Salt, 2*receipt.SaltSize, "a salt of 16 bytes in hex")
		assert.Equal(t, "eip155:42793", a.Network)
		assert.Equal(t, "0xb10c", a.BlockHash)
		assert.Equal(t, "finalized", a.Finality)
		assert.NoError(t, r.CheckProof(a))
		want := make([]string, len(paths[a.LeafIndex]))
		for i, h := range paths[a.LeafIndex] {
			want[i] = hex.EncodeToString(h[:])
		}
		assert.Equal(t, want, a.Path, "the path read is the anchored tree's")

		// The path holds no other evidence's bare leaf hash: every leaf is salted.
		for _, other := range evs {
			d, err := hex.DecodeString(other.Digest)
			require.NoError(t, err)
			bare := merkle.LeafHash(d)
			assert.NotContains(t, a.Path, hex.EncodeToString(bare[:]))
		}

		// A receipt for another digest does not check against the same anchor.
		forged := r
		forged.Digest = hexDigest("forged")
		assert.Error(t, forged.CheckProof(a))

		got := f.get(t, ev.ID)
		assert.Equal(t, "confirmed", got.Status)
		require.NotNil(t, got.Receipt)
		assert.Equal(t, r, *got.Receipt)
		assert.True(t, blockTime.Equal(got.ExistedBy), "the evidence existed no later than its anchor's block time")
		assert.True(t, blockTime.Equal(got.Anchors[0].BlockTime), "the anchor shows its block time")
		assert.Equal(t, r.Salt, got.Salt, "the evidence's own GET hands out its salt")
		assert.Equal(t, "/v1/evidence/"+ev.ID+"/receipt", got.Links["receipt"])
	}

	// A list names no salt and carries no receipt, only the link to one.
	rec = f.do(t, "GET", "/v1/evidence?status=confirmed", "")
	require.Equal(t, http.StatusOK, rec.Code)
	var page struct{ Items []api.Evidence }
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
	require.Len(t, page.Items, 3)
	for _, it := range page.Items {
		assert.Empty(t, it.Salt)
		assert.Nil(t, it.Receipt)
		assert.NotEmpty(t, it.Links["receipt"])
	}
	assert.NotContains(t, rec.Body.String(), "salt")
}

func TestEvidenceTakenInBeforeSaltsKeepsAVersionOneReceiptThatVerifies(t *testing.T) {
	f := newFixture(t, 100)
	ctx := context.Background()
	old := f.submit(t, "taken in before the upgrade", 5)
	salted := f.submit(t, "taken in after it", 5)
	// Migration 5 left the salt of every evidence stored before it NULL.
	db, err := sql.Open("sqlite", f.path)
	require.NoError(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, `UPDATE evidence SET salt = NULL WHERE id = ?`, old.ID)
	require.NoError(t, err)

	b, ok, err := f.st.FormBatch(ctx, "stub", 10)
	require.NoError(t, err)
	require.True(t, ok)
	leaves, err := f.st.BatchLeaves(ctx, b.ID)
	require.NoError(t, err)
	require.Len(t, leaves, 2)
	tree, err := merkle.Build(leaves)
	require.NoError(t, err)
	require.NoError(t, f.st.MarkSubmitted(ctx, b.ID, tree.Root(), "0xfeed"))
	require.NoError(t, f.st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: "0xfeed", Block: 9, BlockTime: time.Now(),
		Network: "eip155:42793", BlockHash: "0xb10c", Finality: "finalized"}))

	for id, want := range map[string]int{old.ID: receipt.VersionUnsalted, salted.ID: receipt.VersionSalted} {
		rec := f.do(t, "GET", "/v1/evidence/"+id+"/receipt", "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		r, err := receipt.Parse(rec.Body.Bytes())
		require.NoError(t, err)
		assert.Equal(t, want, r.Version)
		assert.NoError(t, r.CheckProof(r.Anchors[0]), "version %d", want)
		if want == receipt.VersionUnsalted {
			assert.Empty(t, r.Salt)
			assert.Empty(t, r.Anchors[0].Network, "version 1 names no network")
		}
	}
}

func TestMetricsCountIntakeAnswersByStatusAndShowThePendingQueue(t *testing.T) {
	f := newFixture(t, 100)
	f.submit(t, "one", 5)
	f.submit(t, "two", 5)
	require.Equal(t, http.StatusBadRequest, f.do(t, "POST", "/v1/evidence", "{}").Code)

	rec := f.do(t, "GET", "/metrics", "")
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	assert.Contains(t, body, `keeper_intake_requests_total{code="202"} 2`)
	assert.Contains(t, body, `keeper_intake_requests_total{code="400"} 1`)
	assert.Contains(t, body, "keeper_evidence_pending 2")
	assert.Contains(t, body, "keeper_intake_duration_seconds_count 3")
}

func TestReusingAnIdempotencyKeyForOtherEvidenceIsRefusedWith422(t *testing.T) {
	f := newFixture(t, 1)
	first := f.post(t, map[string]any{"digest": hexDigest("a"), "chains": []string{"stub"}, "priority": 7, "idempotency_key": "k-1"})
	require.Equal(t, http.StatusAccepted, first.Code, first.Body.String())
	id := apitest.Decode[api.Evidence](t, first).ID

	// The queue is now full for priority 6–10, yet a repeat still gets its evidence back.
	again := f.post(t, map[string]any{"digest": hexDigest("a"), "chains": []string{"stub"}, "priority": 7, "idempotency_key": "k-1"})
	require.Equal(t, http.StatusOK, again.Code, again.Body.String())
	assert.Equal(t, id, apitest.Decode[api.Evidence](t, again).ID)

	other := f.post(t, map[string]any{"digest": hexDigest("b"), "chains": []string{"stub"}, "priority": 7, "idempotency_key": "k-1"})
	apitest.RequireRefused(t, other, http.StatusUnprocessableEntity, "idempotency_conflict", "idempotency_key")
	assert.Contains(t, apitest.Decode[apitest.Problem](t, other).Message, id)
	assert.Equal(t, []string{id}, f.stored(t))
}

func TestAPendingEvidenceSaysWhenItsBatchIsDueByTheAnchorInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 100)
		f.anchor.Interval = func(string) time.Duration { return time.Hour }
		f.serve(t)
		ctx := context.Background()
		// A batch formed just now opens the chain's interval.
		rec := f.post(t, map[string]any{"digest": strings.Repeat("ab", 32), "chains": []string{"stub"}})
		require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
		_, ok, err := f.st.FormBatch(ctx, "stub", 10)
		require.NoError(t, err)
		require.True(t, ok)

		rec = f.post(t, map[string]any{"digest": strings.Repeat("cd", 32), "chains": []string{"stub"}})
		require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
		id := apitest.Decode[struct{ ID string }](t, rec).ID
		got := apitest.Decode[struct {
			Anchors []struct {
				Chain      string `json:"chain"`
				BatchDueAt string `json:"batch_due_at"`
			} `json:"anchors"`
		}](t, f.do(t, http.MethodGet, "/v1/evidence/"+id, ""))
		require.Len(t, got.Anchors, 1)
		due, err := time.Parse(time.RFC3339Nano, got.Anchors[0].BatchDueAt)
		require.NoError(t, err, "batch_due_at: %q", got.Anchors[0].BatchDueAt)
		assert.Equal(t, time.Now().Add(time.Hour).UTC(), due.UTC(), "the bubble's clock has not moved since the batch formed")
	})
}
