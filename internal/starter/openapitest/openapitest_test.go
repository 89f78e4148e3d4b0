package openapitest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/starter/openapitest"
)

// The check holds the API to the codes, statuses, fields and routes the
// description lists: what it lacks is refused.
func TestTheCheckRefusesAnUndescribedCodeStatusFieldOrRoute(t *testing.T) {
	answer := func(status int, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "application/json")
		if status >= 400 {
			rec.Header().Set("Content-Type", "application/problem+json") // RFC 9457, as the API answers errors
		}
		rec.WriteHeader(status)
		rec.WriteString(body)
		return rec
	}
	get := httptest.NewRequest(http.MethodGet, "/v1/evidence/ev_000000000000000000000000", nil)
	cases := map[string]struct {
		r    *http.Request
		rec  *httptest.ResponseRecorder
		says string // what the refusal names
	}{
		"an error code the answer does not list": {get, answer(404, `{"type":"tag:keeperhq.github.io,2026:problems/gone","title":"T","status":404,"detail":"x","code":"gone","message":"x"}`), `"/code": value is not one of the allowed values`},
		"a status the operation does not list":   {get, answer(402, `{"type":"tag:keeperhq.github.io,2026:problems/not_found","title":"T","status":402,"detail":"x","code":"not_found","message":"x"}`), "status is not supported"},
		"an error without its message":           {get, answer(404, `{"type":"tag:keeperhq.github.io,2026:problems/not_found","title":"T","status":404,"detail":"x","code":"not_found"}`), `property "message" is missing`},
		"an undescribed field in an answer":      {httptest.NewRequest(http.MethodGet, "/health", nil), answer(200, `{"status":"ok","uptime":3}`), "'uptime' not allowed"},
		"a route the description lacks":          {httptest.NewRequest(http.MethodGet, "/v1/batches", nil), answer(200, `{}`), "no operation describes the request"},
		"a 405 without its Allow header":         {httptest.NewRequest(http.MethodDelete, "/health", nil), answer(405, `{"type":"tag:keeperhq.github.io,2026:problems/method_not_allowed","title":"T","status":405,"detail":"x","code":"method_not_allowed","message":"x"}`), "without its Allow header"},
		"a 401 without its WWW-Authenticate":     {httptest.NewRequest(http.MethodGet, "/v1/evidence", nil), answer(401, `{"type":"tag:keeperhq.github.io,2026:problems/unauthorized","title":"T","status":401,"detail":"x","code":"unauthorized","message":"x"}`), "WWW-Authenticate"},
		"an undescribed field the API took": {httptest.NewRequest(http.MethodPost, "/v1/wallets", strings.NewReader(`{"address":"a","label":"cold"}`)),
			answer(202, `{}`), "'label' not allowed"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			body, err := io.ReadAll(c.r.Body)
			require.NoError(t, err)
			assert.Contains(t, openapitest.Check(c.r, body, c.rec), c.says)
		})
	}
	ok := answer(404, `{"type":"tag:keeperhq.github.io,2026:problems/not_found","title":"T","status":404,"detail":"no evidence ev_000000000000000000000000","code":"not_found","message":"no evidence ev_000000000000000000000000","field":"id"}`)
	assert.Empty(t, openapitest.Check(get, nil, ok), "a described answer passes")
}
