package node_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/node"
)

func TestANodeWithABadCodecKeyFileStopsAtStartWithOneLine(t *testing.T) {
	secret := "Zm9vYmFyYmF6Zm9vYmFyYmF6Zm9vYmFyYmF6"
	keys := filepath.Join(t.TempDir(), "codec.keys")
	require.NoError(t, os.WriteFile(keys, []byte("k1 "+secret+"\n"), 0o600))
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.CodecKeyFile = keys

	_, err := node.Start(context.Background(), node.Options{Config: cfg, Roles: node.Roles{API: true, Worker: true}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.Error(t, err)
	assert.Equal(t, "KEEPER_CODEC_KEY_FILE "+keys+`: line 1: key "k1" is not base64 of 32 bytes (make one with `+"`openssl rand -base64 32`)", err.Error())
	assert.False(t, strings.Contains(err.Error(), secret))
	_, statErr := os.Stat(node.StoreFile(cfg.DataDir))
	assert.True(t, os.IsNotExist(statErr), "nothing was opened")
}
