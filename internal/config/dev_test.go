package config

import (
	"io"
	"reflect"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTheDevStacksSettingsAreApartFromProductions: the production
// commands bind no KEEPER_DEV_* flag, the dev commands bind every one, and
// each sets a field of DevConfig (none is left without a knob).
func TestTheDevStacksSettingsAreApartFromProductions(t *testing.T) {
	var c Config
	prod := pflag.NewFlagSet("keeper worker and api", pflag.ContinueOnError)
	prod.SetOutput(io.Discard)
	c.Bind(prod, Base|Store|Node|LogSigner|LogMirror)
	dev := pflag.NewFlagSet("keeper dev", pflag.ContinueOnError)
	c.Bind(dev, Everything)

	var devKnobs int
	for _, k := range c.Knobs() {
		assert.NotNil(t, dev.Lookup(k.Flag), "the dev commands take --%s", k.Flag)
		if k.Uses&(DevServer|LocalChains|Profiling|LocalWitnesses) == k.Uses {
			assert.Nil(t, prod.Lookup(k.Flag), "production commands take no --%s", k.Flag)
		} else {
			assert.NotNil(t, prod.Lookup(k.Flag), "--%s", k.Flag)
		}
		if k.Uses&(DevServer|LocalChains|LocalWitnesses) != 0 && k.Uses&Node == 0 {
			devKnobs++
			assert.Regexp(t, `^KEEPER_DEV_`, k.Env)
		} else {
			assert.NotRegexp(t, `^KEEPER_DEV_`, k.Env, "a KEEPER_DEV_ setting belongs in DevConfig")
		}
	}
	assert.Equal(t, reflect.TypeFor[DevConfig]().NumField(), devKnobs, "every DevConfig field has its knob")

	require.NoError(t, dev.Parse([]string{"--dev-temporal-port", "7300", "--dev-evm-block-ms", "250"}))
	assert.Equal(t, 7300, c.Dev.TemporalPort)
	assert.Equal(t, "250ms", c.Dev.EVMBlockTime.String())
	assert.Error(t, prod.Parse([]string{"--dev-temporal-port", "7300"}))
}

// TestKeeperDevsQuickCadenceYieldsToWhatTheUserSet: `keeper dev` anchors
// and signs checkpoints twice a second unless --anchor-interval,
// --log-checkpoint-interval or their environment variables say otherwise.
func TestKeeperDevsQuickCadenceYieldsToWhatTheUserSet(t *testing.T) {
	none := func(string) bool { return false }

	c := Default()
	c.DevCadence(none)
	assert.Equal(t, DevAnchorInterval, c.AnchorInterval)
	assert.Equal(t, DevLogCheckpointInterval, c.Log.CheckpointInterval)

	c = Default()
	fs := pflag.NewFlagSet("keeper dev", pflag.ContinueOnError)
	c.Bind(fs, Everything)
	require.NoError(t, fs.Parse([]string{"--log-checkpoint-interval", "3s"}))
	c.DevCadence(nil)
	assert.Equal(t, "3s", c.Log.CheckpointInterval.String(), "the flag stands")
	assert.Equal(t, DevAnchorInterval, c.AnchorInterval)

	c, err := Load(func(k string) string { return map[string]string{"KEEPER_ANCHOR_INTERVAL": "2s"}[k] })
	require.NoError(t, err)
	c.DevCadence(none)
	assert.Equal(t, "2s", c.AnchorInterval.String(), "the environment stands")
	assert.Equal(t, DevLogCheckpointInterval, c.Log.CheckpointInterval)
}

// TestKeeperDevAllowsPrivateURLsUnlessTheEnvironmentOrAFlagSaidOtherwise:
// the environment is the one Load read, not the process's.
func TestKeeperDevAllowsPrivateURLsUnlessTheEnvironmentOrAFlagSaidOtherwise(t *testing.T) {
	c := Default()
	c.DevURLs(false)
	assert.True(t, c.AllowPrivateURLs)

	c = Default()
	c.DevURLs(true)
	assert.False(t, c.AllowPrivateURLs, "--webhook-allow-private=false stands")

	c, err := Load(func(k string) string { return map[string]string{"KEEPER_WEBHOOK_ALLOW_PRIVATE": "false"}[k] })
	require.NoError(t, err)
	c.DevURLs(false)
	assert.False(t, c.AllowPrivateURLs, "the environment stands")
	assert.Equal(t, "environment KEEPER_WEBHOOK_ALLOW_PRIVATE", c.SourceOf("KEEPER_WEBHOOK_ALLOW_PRIVATE").String())
}
