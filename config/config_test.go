package config

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadmeHasTheCurrentConfigTable(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(readme), MarkdownTable()), "README's config table is stale: paste the output of `go run ./cmd/keeper config`")
}

func TestEnvironmentOverridesDefaults(t *testing.T) {
	env := map[string]string{"KEEPER_BATCH_MAX_ITEMS": "1", "KEEPER_POLL_MS": "250", "KEEPER_DRAIN_TIMEOUT": "3s", "KEEPER_CHAINS": " stub , "}
	c, err := Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, 1, c.BatchMaxItems)
	assert.Equal(t, 250*time.Millisecond, c.PollInterval)
	assert.Equal(t, 3*time.Second, c.DrainTimeout)
	assert.Equal(t, []string{"stub"}, c.Chains)
	assert.Equal(t, 1024, Default().BatchMaxItems)
}

func TestBadSettingsNameTheVariable(t *testing.T) {
	for env, val := range map[string]string{
		"KEEPER_BATCH_MAX_ITEMS": "0", "KEEPER_POLL_MS": "soon", "KEEPER_CHAINS": "bitcoin", "KEEPER_DRAIN_TIMEOUT": "10",
	} {
		_, err := Load(func(k string) string {
			if k == env {
				return val
			}
			return ""
		})
		require.Error(t, err, env)
		assert.True(t, strings.Contains(err.Error(), env), "%s: %v", env, err)
	}
}
