package anchor_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

func TestTheIdempotencyKeyHeaderActsAsTheBodysField(t *testing.T) {
	f := newFixture(t, 100)
	body := `{"digest":"` + hexDigest("header") + `","chains":["stub"]}`
	first := f.doWith(t, "POST", "/v1/evidence", body, map[string]string{"Idempotency-Key": "upload-42"})
	require.Equal(t, http.StatusAccepted, first.Code, first.Body.String())
	ev := apitest.Decode[api.Evidence](t, first)
	assert.Equal(t, "upload-42", ev.IdempotencyKey)

	// The draft's quoted form, and the key in the body, name the same evidence.
	again := f.doWith(t, "POST", "/v1/evidence", body, map[string]string{"Idempotency-Key": `"upload-42"`})
	require.Equal(t, http.StatusOK, again.Code, again.Body.String())
	assert.Equal(t, ev.ID, apitest.Decode[api.Evidence](t, again).ID)
	inBody := f.do(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest("header")+`","chains":["stub"],"idempotency_key":"upload-42"}`)
	require.Equal(t, http.StatusOK, inBody.Code, inBody.Body.String())
	assert.Equal(t, ev.ID, apitest.Decode[api.Evidence](t, inBody).ID)

	// Another digest under the same header key is the body field's conflict.
	other := f.doWith(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest("other")+`","chains":["stub"]}`, map[string]string{"Idempotency-Key": "upload-42"})
	apitest.RequireRefused(t, other, http.StatusUnprocessableEntity, "idempotency_conflict", "idempotency_key")
	assert.Equal(t, []string{ev.ID}, f.stored(t))
}

func TestTheSameKeyInTheHeaderAndTheBodyIsAccepted(t *testing.T) {
	f := newFixture(t, 100)
	rec := f.doWith(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest("both")+`","chains":["stub"],"idempotency_key":"k-1"}`, map[string]string{"Idempotency-Key": "k-1"})
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	assert.Equal(t, "k-1", apitest.Decode[api.Evidence](t, rec).IdempotencyKey)
}

func TestADifferentKeyInTheHeaderAndTheBodyIsRefusedAndStoresNothing(t *testing.T) {
	f := newFixture(t, 100)
	rec := f.doWith(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest("both")+`","chains":["stub"],"idempotency_key":"k-1"}`, map[string]string{"Idempotency-Key": "k-2"})
	apitest.RequireRefused(t, rec, http.StatusBadRequest, "conflicting_idempotency_key", "Idempotency-Key")
	assert.Contains(t, apitest.Decode[apitest.Problem](t, rec).Message, "idempotency_key")
	assert.Empty(t, f.stored(t))
}

func TestABadIdempotencyKeyHeaderIsRefused(t *testing.T) {
	f := newFixture(t, 100)
	body := `{"digest":"` + hexDigest("bad") + `","chains":["stub"]}`
	for name, key := range map[string]string{
		"an empty quoted key":  `""`,
		"a key of 300 bytes":   strings.Repeat("k", 300),
		"a key with a control": "a\x7fb",
	} {
		t.Run(name, func(t *testing.T) {
			rec := f.doWith(t, "POST", "/v1/evidence", body, map[string]string{"Idempotency-Key": key})
			apitest.RequireRefused(t, rec, http.StatusBadRequest, "invalid_idempotency_key", "Idempotency-Key")
		})
	}
	assert.Empty(t, f.stored(t))
}

func TestABadRequestIsAnsweredWithProblemDetailsThatKeepItsCode(t *testing.T) {
	f := newFixture(t, 100)
	rec := f.do(t, "POST", "/v1/evidence", `{"digest":"abc","chains":["stub"]}`)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	var p map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &p))
	assert.Equal(t, map[string]any{
		"type":    "tag:keeperhq.github.io,2026:problems/invalid_digest",
		"title":   "Invalid digest",
		"status":  float64(400),
		"detail":  "digest must be a SHA-256 digest: 64 hex characters",
		"code":    "invalid_digest",
		"message": "digest must be a SHA-256 digest: 64 hex characters",
		"field":   "digest",
	}, p)

	// An evidence's errors name it as the problem's instance.
	id := "ev_" + strings.Repeat("0", 24)
	missing := f.do(t, "GET", "/v1/evidence/"+id, "")
	apitest.RequireRefused(t, missing, http.StatusNotFound, "not_found", "id")
	assert.Equal(t, "/v1/evidence/"+id, apitest.Decode[apitest.Problem](t, missing).Instance)
}

func TestAKeyReusedWithOnlyOtherMetadataIsRefusedWith422(t *testing.T) {
	f := newFixture(t, 100)
	first := f.post(t, map[string]any{"digest": hexDigest("m"), "chains": []string{"stub"}, "idempotency_key": "k-m", "metadata": map[string]any{"case": 7}})
	require.Equal(t, http.StatusAccepted, first.Code, first.Body.String())
	id := apitest.Decode[api.Evidence](t, first).ID

	for name, md := range map[string]any{
		"other metadata": map[string]any{"case": 8},
		"no metadata":    nil,
		"more metadata":  map[string]any{"case": 7, "page": 2},
	} {
		t.Run(name, func(t *testing.T) {
			body := map[string]any{"digest": hexDigest("m"), "chains": []string{"stub"}, "idempotency_key": "k-m"}
			if md != nil {
				body["metadata"] = md
			}
			rec := f.post(t, body)
			apitest.RequireRefused(t, rec, http.StatusUnprocessableEntity, "idempotency_conflict", "idempotency_key")
			assert.Contains(t, apitest.Decode[apitest.Problem](t, rec).Message, id)
		})
	}
	assert.Equal(t, []string{id}, f.stored(t))
}

func TestAKeyReusedWithOnlyOtherMetadataIsABulkItems422(t *testing.T) {
	f := newFixture(t, 100)
	earlier := f.batch(t, item("m", "idempotency_key", "k-m", "metadata", map[string]any{"case": 7}))
	requireItemTaken(t, earlier[0], http.StatusAccepted)

	got := f.batch(t,
		item("m", "idempotency_key", "k-m", "metadata", map[string]any{"case": 8}), // a key stored before
		item("n", "idempotency_key", "k-n", "metadata", map[string]any{"case": 1}),
		item("n", "idempotency_key", "k-n", "metadata", map[string]any{"case": 2}), // a key earlier in this request
	)
	requireItemRefused(t, got[0], http.StatusUnprocessableEntity, "idempotency_conflict", "items[0].idempotency_key")
	requireItemTaken(t, got[1], http.StatusAccepted)
	requireItemRefused(t, got[2], http.StatusUnprocessableEntity, "idempotency_conflict", "items[2].idempotency_key")
	assert.ElementsMatch(t, []string{earlier[0].ID, got[1].ID}, f.stored(t))
}

func TestTheSameRequestAgainAnswersTheOriginalEvidenceEvenWithItsMetadataWrittenDifferently(t *testing.T) {
	f := newFixture(t, 100)
	body := func(md string) string {
		return `{"digest":"` + hexDigest("same") + `","chains":["stub"],"idempotency_key":"k-s","metadata":` + md + `}`
	}
	first := f.do(t, "POST", "/v1/evidence", body(`{"case":7,"tags":["a","b"],"by":{"x":1,"y":2}}`))
	require.Equal(t, http.StatusAccepted, first.Code, first.Body.String())
	ev := apitest.Decode[api.Evidence](t, first)

	for _, md := range []string{
		`{"case":7,"tags":["a","b"],"by":{"x":1,"y":2}}`,
		`{ "by": {"y": 2, "x": 1}, "tags": ["a", "b"], "case": 7 }`, // the same object, its members in another order
	} {
		again := f.do(t, "POST", "/v1/evidence", body(md))
		require.Equal(t, http.StatusOK, again.Code, again.Body.String())
		assert.Equal(t, ev.ID, apitest.Decode[api.Evidence](t, again).ID)
	}
	// The order of an array's items, and how a number is written, count.
	for _, md := range []string{`{"case":7,"tags":["b","a"],"by":{"x":1,"y":2}}`, `{"case":7.0,"tags":["a","b"],"by":{"x":1,"y":2}}`} {
		apitest.RequireRefused(t, f.do(t, "POST", "/v1/evidence", body(md)), http.StatusUnprocessableEntity, "idempotency_conflict", "idempotency_key")
	}
	assert.Equal(t, []string{ev.ID}, f.stored(t))
}

func TestTheHeaderKeyIsReadAsTheDraftsStructuredFieldString(t *testing.T) {
	f := newFixture(t, 100)
	body := `{"digest":"` + hexDigest("sf") + `","chains":["stub"]}`
	first := f.doWith(t, "POST", "/v1/evidence", body, map[string]string{"Idempotency-Key": `"say \"hi\" \\ 1"`})
	require.Equal(t, http.StatusAccepted, first.Code, first.Body.String())
	ev := apitest.Decode[api.Evidence](t, first)
	assert.Equal(t, `say "hi" \ 1`, ev.IdempotencyKey, "the string's escapes are undone")

	bare := f.doWith(t, "POST", "/v1/evidence", body, map[string]string{"Idempotency-Key": `say "hi" \ 1`})
	require.Equal(t, http.StatusOK, bare.Code, bare.Body.String())
	assert.Equal(t, ev.ID, apitest.Decode[api.Evidence](t, bare).ID, "the bare key is the same key")

	for _, v := range []string{`"no closing quote`, `"a" "b"`, `"bad \escape"`} {
		rec := f.doWith(t, "POST", "/v1/evidence", `{"digest":"`+hexDigest(v)+`","chains":["stub"]}`, map[string]string{"Idempotency-Key": v})
		apitest.RequireRefused(t, rec, http.StatusBadRequest, "invalid_idempotency_key", "Idempotency-Key")
	}
	assert.Equal(t, []string{ev.ID}, f.stored(t))
}

func TestConcurrentRequestsWithOneIdempotencyKeyStoreOneEvidence(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		const n = 24
		single := `{"digest":"` + hexDigest("race") + `","chains":["stub"],"metadata":{"case":1}}`
		bulk := `{"items":[{"digest":"` + hexDigest("race") + `","chains":["stub"],"metadata":{"case":1},"idempotency_key":"race-1"}]}`
		type answer struct {
			status int
			id     string
		}
		answers := make([]answer, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				var rec *httptest.ResponseRecorder
				switch i % 3 {
				case 0: // the key as the draft's string
					rec = f.doWith(t, "POST", "/v1/evidence", single, map[string]string{"Idempotency-Key": `"race-1"`})
				case 1: // bare
					rec = f.doWith(t, "POST", "/v1/evidence", single, map[string]string{"Idempotency-Key": "race-1"})
				default: // an item of a batch
					rec = f.doWith(t, "POST", "/v1/evidence/batch", bulk, nil)
					var b struct {
						Items []struct {
							Status int
							ID     string
						}
					}
					if assert.Equal(t, http.StatusMultiStatus, rec.Code, rec.Body.String()) && assert.NoError(t, json.Unmarshal(rec.Body.Bytes(), &b)) && assert.Len(t, b.Items, 1) {
						answers[i] = answer{b.Items[0].Status, b.Items[0].ID}
					}
					return
				}
				var ev api.Evidence
				assert.NoError(t, json.Unmarshal(rec.Body.Bytes(), &ev), rec.Body.String())
				answers[i] = answer{rec.Code, ev.ID}
			})
		}
		wg.Wait()

		stored := f.stored(t)
		require.Len(t, stored, 1, "one evidence for one key")
		created := 0
		for i, a := range answers {
			assert.Equal(t, stored[0], a.id, "request %d answers the stored evidence", i)
			switch a.status {
			case http.StatusAccepted:
				created++
			case http.StatusOK:
			default:
				t.Errorf("request %d answered %d", i, a.status)
			}
		}
		assert.Equal(t, 1, created, "one request stored it; the others were answered with it")
	})
}

func TestConcurrentRequestsWithOneKeyAndOtherMetadataStoreOneAndRefuseTheRest(t *testing.T) {
	eachStore(t, func(t *testing.T, f *fixture) {
		const n = 12
		codes := make([]int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				body := fmt.Sprintf(`{"digest":"%s","chains":["stub"],"metadata":{"attempt":%d}}`, hexDigest("race"), i)
				codes[i] = f.doWith(t, "POST", "/v1/evidence", body, map[string]string{"Idempotency-Key": `"race-2"`}).Code
			})
		}
		wg.Wait()
		require.Len(t, f.stored(t), 1)
		count := map[int]int{}
		for _, c := range codes {
			count[c]++
		}
		assert.Equal(t, map[int]int{http.StatusAccepted: 1, http.StatusUnprocessableEntity: n - 1}, count)
	})
}

// eachStore runs test against the API on a fresh SQLite store and on a
// fresh PostgreSQL one (in a schema of its own; skipped without a server,
// except in CI).
func eachStore(t *testing.T, test func(t *testing.T, f *fixture)) {
	storetest.Each(t, func(t *testing.T, db storetest.Backend) { test(t, fixtureOn(t, db.Open(t), 100, "stub")) })
}
