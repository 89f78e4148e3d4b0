package cli_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
)

// deadLetterAll forms every pending stub evidence into one batch and
// dead-letters it.
func (s *server) deadLetterAll(t *testing.T) store.Batch {
	t.Helper()
	ctx := context.Background()
	b, ok, err := s.st.FormBatch(ctx, "stub", 100)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.st.DeadLetterBatch(ctx, b.ID, "stub: provider down"))
	return b
}

func TestRedriveIsADryRunUntilYesThenRedrivesAndAgainFindsNothing(t *testing.T) {
	s := newServer(t)
	a, b := s.insert(t, "a"), s.insert(t, "b")
	s.deadLetterAll(t)

	out, _, err := keeper(t, "redrive", "--api", s.url, "--chain", "stub", "--since", "1h")
	require.NoError(t, err)
	assert.Contains(t, out, "dry run: would re-drive 2 evidence (2 anchors) from 1 dead-lettered batch(es)")
	assert.Contains(t, out, "stub: provider down")
	assert.Contains(t, out, a.ID+" "+b.ID)
	assert.Contains(t, out, "--yes")
	ev, err := s.st.GetEvidence(context.Background(), a.ID)
	require.NoError(t, err)
	assert.Equal(t, store.StatusDeadLetter, ev.Status, "a dry run changes nothing")

	out, _, err = keeper(t, "redrive", "--api", s.url, "--yes")
	require.NoError(t, err)
	assert.Contains(t, out, "re-drove 2 evidence")
	for _, id := range []string{a.ID, b.ID} {
		ev, err := s.st.GetEvidence(context.Background(), id)
		require.NoError(t, err)
		assert.Equal(t, store.StatusPending, ev.Status)
	}

	out, _, err = keeper(t, "redrive", "--api", s.url, "--execute")
	require.NoError(t, err)
	assert.Contains(t, out, "nothing to re-drive")
}

func TestRedriveWithABadTimeFailsNamingTheFlag(t *testing.T) {
	s := newServer(t)
	_, _, err := keeper(t, "redrive", "--api", s.url, "--until", "yesterday")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--until")
	assert.Empty(t, s.postPaths(), "nothing was sent")
}
