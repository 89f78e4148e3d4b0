package cli_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// `keeper submit FILE` with no --chains anchors on every chain the API is
// configured with, so the README's example works on a fresh `keeper dev`
// (etherlink and solana), not only where the stub chain is configured.
func TestSubmitWithoutChainsAnchorsOnEveryConfiguredChain(t *testing.T) {
	s := newServerWith(t, "etherlink", "solana")

	f := writeFile(t, t.TempDir(), "report.txt", []byte("quarterly report\n"))
	out, _, err := keeper(t, "submit", f, "--api", s.url)
	require.NoError(t, err)
	id := strings.Split(strings.TrimSpace(out), "\t")[0]
	ev, err := s.st.GetEvidence(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, []string{"etherlink", "solana"}, ev.Chains)

	_, _, err = keeper(t, "submit", f, "--chains", "stub", "--api", s.url)
	require.Error(t, err, "an unconfigured chain asked for by name is still refused")
	assert.Contains(t, err.Error(), "unknown_chain")
}
