package cli_test

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/starter"
	"github.com/keeperhq/keeper/store"
)

// `keeper submit FILE` with no --chains anchors on every chain the API is
// configured with, so the README's example works on a fresh `keeper dev`
// (etherlink and solana), not only where the stub chain is configured.
func TestSubmitWithoutChainsAnchorsOnEveryConfiguredChain(t *testing.T) {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "keeper.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	api := &starter.API{Store: st, Chains: []string{"etherlink", "solana"}, MaxPending: 100, MaxBodyBytes: 1 << 20,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	srv := httptest.NewServer(api.Handler())
	t.Cleanup(srv.Close)

	f := writeFile(t, t.TempDir(), "report.txt", []byte("quarterly report\n"))
	out, _, err := keeper(t, "submit", f, "--api", srv.URL)
	require.NoError(t, err)
	id := strings.Split(strings.TrimSpace(out), "\t")[0]
	ev, err := st.GetEvidence(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, []string{"etherlink", "solana"}, ev.Chains)

	_, _, err = keeper(t, "submit", f, "--chains", "stub", "--api", srv.URL)
	require.Error(t, err, "an unconfigured chain asked for by name is still refused")
	assert.Contains(t, err.Error(), "unknown_chain")
}
