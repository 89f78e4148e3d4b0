package anchor_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The example of the answer to evidence without chains is one this API
// takes: a chain it is configured with, never one it is not (the stub).
func TestEvidenceWithoutChainsIsShownAChainConfiguredHere(t *testing.T) {
	f := newFixture(t, 100, "etherlink", "solana")
	rec := f.post(t, map[string]any{"digest": hexDigest("a"), "chains": []string{}})
	require.Equal(t, http.StatusBadRequest, rec.Code, rec.Body.String())
	assert.Contains(t, rec.Body.String(), `e.g. [\"etherlink\"]`)
	assert.NotContains(t, rec.Body.String(), "stub")

	rec = f.post(t, map[string]any{"digest": hexDigest("a"), "chains": []string{"etherlink"}})
	assert.Equal(t, http.StatusAccepted, rec.Code, "the example, as given, is taken: %s", rec.Body.String())
}
