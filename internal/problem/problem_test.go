package problem_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/problem"
)

func TestAProblemCarriesRFC9457MembersAndKeepersCode(t *testing.T) {
	rec := httptest.NewRecorder()
	problem.Write(rec, http.StatusBadRequest, problem.New(http.StatusBadRequest, "invalid_digest", "digest must be 64 hex characters", "digest"))

	assert.Equal(t, http.StatusBadRequest, rec.Code)
	assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	var got map[string]any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
	assert.Equal(t, map[string]any{
		"type": "tag:keeperhq.github.io,2026:problems/invalid_digest", "title": "Invalid digest", "status": float64(400),
		"detail": "digest must be 64 hex characters", "code": "invalid_digest", "message": "digest must be 64 hex characters", "field": "digest",
	}, got)
}

func TestATitleIsTheSameForEveryOccurrenceOfACode(t *testing.T) {
	assert.Equal(t, "Idempotency conflict", problem.Title("idempotency_conflict"))
	assert.Equal(t, "Internal", problem.Title("internal"))
	assert.Equal(t, problem.New(500, "internal", "a", "").Title, problem.New(500, "internal", "b", "").Title)
}
