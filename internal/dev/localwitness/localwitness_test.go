package localwitness

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
)

// TestLocalWitnessesAnswerTheProtocolAndKeepTheirKeysAcrossARestart: keeper
// dev --witnesses 2 lists two witnesses that answer add-checkpoint, and a
// restart on the same data directory brings back the same witnesses (a new
// key would be a new witness the trust root does not list).
func TestLocalWitnessesAnswerTheProtocolAndKeepTheirKeysAcrossARestart(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir, cfg.Dev.Witnesses = t.TempDir(), 2
	first := cfg
	ws, err := StartFor(context.Background(), &first, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	require.Len(t, first.Log.Witnesses, 2)
	assert.Equal(t, []string{"witness-1.keeper.localhost", "witness-2.keeper.localhost"}, ws.Names())
	_, quorum, err := first.LogWitnesses()
	require.NoError(t, err)
	assert.Equal(t, 2, quorum, "all of them, unless KEEPER_LOG_WITNESS_QUORUM says otherwise")
	for _, entry := range first.Log.Witnesses {
		_, url, _ := strings.Cut(entry, " ")
		resp, err := http.Post(url+"/add-checkpoint", "text/plain", strings.NewReader("not a request\n"))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	}
	ws.Stop()

	again := cfg
	ws, err = StartFor(context.Background(), &again, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	defer ws.Stop()
	for i := range again.Log.Witnesses {
		key := func(e string) string { k, _, _ := strings.Cut(e, " "); return k }
		assert.Equal(t, key(first.Log.Witnesses[i]), key(again.Log.Witnesses[i]))
	}

	none := config.Default()
	none.DataDir = t.TempDir()
	ws, err = StartFor(context.Background(), &none, slog.New(slog.DiscardHandler))
	require.NoError(t, err)
	assert.Empty(t, ws.Names())
	assert.Empty(t, none.Log.Witnesses, "the default is no witness")
}
