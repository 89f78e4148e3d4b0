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
		if k.Uses&(DevServer|LocalChains|Profiling) == k.Uses {
			assert.Nil(t, prod.Lookup(k.Flag), "production commands take no --%s", k.Flag)
		} else {
			assert.NotNil(t, prod.Lookup(k.Flag), "--%s", k.Flag)
		}
		if k.Uses&(DevServer|LocalChains) != 0 && k.Uses&Node == 0 {
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
	t.Setenv("KEEPER_ANCHOR_INTERVAL", "")
	t.Setenv("KEEPER_LOG_CHECKPOINT_INTERVAL", "")
	none := func(string) bool { return false }

	c := Default()
	c.DevCadence(none)
	assert.Equal(t, DevAnchorInterval, c.AnchorInterval)
	assert.Equal(t, DevLogCheckpointInterval, c.Log.CheckpointInterval)

	c = Default()
	fs := pflag.NewFlagSet("keeper dev", pflag.ContinueOnError)
	c.Bind(fs, Everything)
	require.NoError(t, fs.Parse([]string{"--log-checkpoint-interval", "3s"}))
	c.DevCadence(fs.Changed)
	assert.Equal(t, "3s", c.Log.CheckpointInterval.String(), "the flag stands")
	assert.Equal(t, DevAnchorInterval, c.AnchorInterval)

	t.Setenv("KEEPER_ANCHOR_INTERVAL", "2s")
	c, err := Load(nil)
	require.NoError(t, err)
	c.DevCadence(none)
	assert.Equal(t, "2s", c.AnchorInterval.String(), "the environment stands")
	assert.Equal(t, DevLogCheckpointInterval, c.Log.CheckpointInterval)
}
