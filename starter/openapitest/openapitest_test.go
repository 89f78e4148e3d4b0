package openapitest_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/starter/openapitest"
)

// The check holds the API to the codes, statuses, fields and routes the
// description lists: what it lacks is refused.
func TestTheCheckRefusesAnUndescribedCodeStatusFieldOrRoute(t *testing.T) {
	answer := func(status int, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "application/json")
		rec.WriteHeader(status)
		rec.WriteString(body)
		return rec
	}
	get := httptest.NewRequest(http.MethodGet, "/v1/evidence/ev_000000000000000000000000", nil)
	cases := map[string]struct {
		r   *http.Request
		rec *httptest.ResponseRecorder
	}{
		"an error code the answer does not list": {get, answer(404, `{"code":"gone","message":"x"}`)},
		"a status the operation does not list":   {get, answer(402, `{"code":"not_found","message":"x"}`)},
		"an error without its message":           {get, answer(404, `{"code":"not_found"}`)},
		"an undescribed field in an answer":      {httptest.NewRequest(http.MethodGet, "/health", nil), answer(200, `{"status":"ok","uptime":3}`)},
		"a route the description lacks":          {httptest.NewRequest(http.MethodGet, "/v1/batches", nil), answer(200, `{}`)},
		"an undescribed field the API took": {httptest.NewRequest(http.MethodPost, "/v1/wallets", strings.NewReader(`{"address":"a","label":"cold"}`)),
			answer(202, `{}`)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			body, err := io.ReadAll(c.r.Body)
			require.NoError(t, err)
			assert.NotEmpty(t, openapitest.Check(c.r, body, c.rec))
		})
	}
	ok := answer(404, `{"code":"not_found","message":"no evidence ev_000000000000000000000000","field":"id"}`)
	assert.Empty(t, openapitest.Check(get, nil, ok), "a described answer passes")
}
