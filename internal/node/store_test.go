package node_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/node"
)

func TestANodeKeepsItsRecordsInPostgreSQLWhenAStoreURLIsSetAndInKeeperDBOtherwise(t *testing.T) {
	ctx := context.Background()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	st, err := node.OpenStore(ctx, cfg)
	require.NoError(t, err)
	require.NoError(t, st.Close())
	assert.FileExists(t, node.StoreFile(cfg.DataDir))

	cfg.DataDir = t.TempDir()
	cfg.StoreURL = "postgres://keeper:pw-never-shown@127.0.0.1:1/keeper?connect_timeout=2"
	_, err = node.OpenStore(ctx, cfg)
	require.Error(t, err, "nothing listens on port 1")
	assert.Contains(t, err.Error(), "postgres://keeper:xxxxx@127.0.0.1:1/keeper")
	assert.NotContains(t, err.Error(), "pw-never-shown")
	assert.NoFileExists(t, node.StoreFile(cfg.DataDir), "no SQLite store on the side")
}
