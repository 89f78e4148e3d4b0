package config

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheBuildIDDefaultsToTheBinarysRevisionThenItsVersionThenDev(t *testing.T) {
	rev := []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"}}
	assert.Equal(t, "0123456789ab", buildIDFrom(&debug.BuildInfo{Settings: rev}))
	modified := append(rev, debug.BuildSetting{Key: "vcs.modified", Value: "true"})
	assert.Equal(t, "0123456789ab-dirty", buildIDFrom(&debug.BuildInfo{Settings: modified}))
	assert.Equal(t, "v1.4.0", buildIDFrom(&debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}}))
	assert.Equal(t, "dev", buildIDFrom(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}))
	assert.Equal(t, "2026.11.23-a", VersioningConfig{BuildID: "2026.11.23-a"}.BuildIDOrDefault(), "a configured build id wins")
}

func TestVersioningIsOffByDefaultAndItsNamesAreCheckedWhenOn(t *testing.T) {
	c := Default()
	assert.False(t, c.Versioning.Enabled)
	assert.Equal(t, "keeper", c.Versioning.DeploymentName)

	for env, val := range map[string]string{"KEEPER_DEPLOYMENT_NAME": "keeper.prod", "KEEPER_BUILD_ID": "__internal"} {
		_, err := Load(func(k string) string {
			return map[string]string{"KEEPER_WORKER_VERSIONING": "true", env: val}[k]
		})
		require.Error(t, err, env)
		assert.Contains(t, err.Error(), env)
	}
	c, err := Load(func(k string) string {
		return map[string]string{"KEEPER_WORKER_VERSIONING": "true", "KEEPER_BUILD_ID": "2026.11.23-a"}[k]
	})
	require.NoError(t, err)
	assert.Equal(t, VersioningConfig{Enabled: true, DeploymentName: "keeper", BuildID: "2026.11.23-a"}, c.Versioning)
}
