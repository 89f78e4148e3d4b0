package config

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// lookup is an environment of its own for Load: the process's is not read.
func lookup(env map[string]string) func(string) string {
	return func(k string) string { return env[k] }
}

// setting is the named setting as `keeper config` shows it.
func setting(t *testing.T, c *Config, env string) Setting {
	t.Helper()
	for _, s := range c.Settings() {
		if s.Env == env {
			return s
		}
	}
	t.Fatalf("no setting %s", env)
	return Setting{}
}

func TestAFormerVariableStillSetsItsSettingAndSaysOnceToUseTheCurrentName(t *testing.T) {
	c, err := Load(lookup(map[string]string{"KEEPER_ETHERLINK_RPC_RATE": "20", "KEEPER_ETHERLINK_RPC_CONNECTIONS": "8"}))
	require.NoError(t, err)
	assert.Equal(t, 20, c.EVM.RPCRate)
	assert.Equal(t, 8, c.EVM.RPCConnections)
	assert.Equal(t, []string{
		"KEEPER_ETHERLINK_RPC_CONNECTIONS is deprecated: it still sets KEEPER_EVM_RPC_CONNECTIONS, but set KEEPER_EVM_RPC_CONNECTIONS instead",
		"KEEPER_ETHERLINK_RPC_RATE is deprecated: it still sets KEEPER_EVM_RPC_RATE, but set KEEPER_EVM_RPC_RATE instead",
	}, c.Deprecations(), "one line per former name used")
	assert.Equal(t, "environment KEEPER_ETHERLINK_RPC_RATE (deprecated: use KEEPER_EVM_RPC_RATE)", setting(t, &c, "KEEPER_EVM_RPC_RATE").Source.String())

	c, err = Load(lookup(map[string]string{"KEEPER_ETHERLINK_RPC_RATE": "20", "KEEPER_EVM_RPC_RATE": "30"}))
	require.NoError(t, err)
	assert.Equal(t, 30, c.EVM.RPCRate, "the current name wins")
	assert.Equal(t, []string{"KEEPER_ETHERLINK_RPC_RATE is deprecated and ignored: KEEPER_EVM_RPC_RATE, its current name, is set; unset KEEPER_ETHERLINK_RPC_RATE"}, c.Deprecations())
	assert.Equal(t, "environment KEEPER_EVM_RPC_RATE", c.SourceOf("KEEPER_EVM_RPC_RATE").String())

	c, err = Load(lookup(map[string]string{"KEEPER_EVM_RPC_RATE": "30"}))
	require.NoError(t, err)
	assert.Empty(t, c.Deprecations(), "the current name says nothing")

	notes, err := CheckEnvironment([]string{"KEEPER_ETHERLINK_RPC_RATE=20"})
	require.NoError(t, err)
	assert.Empty(t, notes, "a former name is no unknown variable")
}

func TestAFormerFlagStillSetsItsSettingAndPflagSaysItIsDeprecated(t *testing.T) {
	c := Default()
	fs := pflag.NewFlagSet("keeper worker", pflag.ContinueOnError)
	var out bytes.Buffer
	fs.SetOutput(&out)
	c.Bind(fs, Everything)
	require.NoError(t, fs.Parse([]string{"--etherlink-rpc-rate=30"}))
	assert.Equal(t, 30, c.EVM.RPCRate)
	assert.Equal(t, "Flag --etherlink-rpc-rate has been deprecated, use --evm-rpc-rate\n", out.String())
	assert.Equal(t, "flag --etherlink-rpc-rate (deprecated: use --evm-rpc-rate)", c.SourceOf("KEEPER_EVM_RPC_RATE").String())
	assert.NotRegexp(t, `(?m)^\s+--etherlink-rpc-rate`, fs.FlagUsages(), "--help lists the current name's flag alone")
	assert.Contains(t, fs.FlagUsages(), "its former name 'KEEPER_ETHERLINK_RPC_RATE' ('--etherlink-rpc-rate') still works, deprecated")
}

// The presets set only what the environment Load was given did not: the
// lookup, not the process's environment, says what was given.
func TestPresetsLeaveWhatTheLookupGaveAndEachValueSaysWhereItCameFrom(t *testing.T) {
	c, err := Load(lookup(map[string]string{
		"KEEPER_EVM_NETWORK": "etherlink-mainnet", "KEEPER_EVM_CHAIN_ID": "1337", "KEEPER_ETHERLINK_RPC_RATE": "50",
		"KEEPER_SOLANA_CLUSTER": "devnet", "KEEPER_SOLANA_HEAD_POLL_MS": "0",
		"KEEPER_ANCHOR_INTERVAL": "2s", "KEEPER_WEBHOOK_ALLOW_PRIVATE": "false",
	}))
	require.NoError(t, err)
	c.NetworkPresets(nil)
	c.DevCadence(nil)
	c.DevURLs(false)

	assert.EqualValues(t, 1337, c.EVM.ChainID)
	assert.Equal(t, 50, c.EVM.RPCRate, "given by its former name: given all the same")
	assert.True(t, c.SolanaPoll.Head.Set)
	assert.Zero(t, c.SolanaPoll.Head.D)
	assert.Equal(t, "2s", c.AnchorInterval.String())
	assert.False(t, c.AllowPrivateURLs)
	assert.True(t, c.EVM.NoTip, "what was not given follows the preset")

	for env, want := range map[string]string{
		"KEEPER_EVM_CHAIN_ID":            "environment KEEPER_EVM_CHAIN_ID",
		"KEEPER_EVM_RPC_RATE":            "environment KEEPER_ETHERLINK_RPC_RATE (deprecated: use KEEPER_EVM_RPC_RATE)",
		"KEEPER_EVM_NO_TIP":              "preset KEEPER_EVM_NETWORK=etherlink-mainnet",
		"KEEPER_SOLANA_CONFIRM_POLL_MS":  "preset KEEPER_SOLANA_CLUSTER=devnet",
		"KEEPER_SOLANA_HEAD_POLL_MS":     "environment KEEPER_SOLANA_HEAD_POLL_MS",
		"KEEPER_LOG_CHECKPOINT_INTERVAL": "preset keeper dev",
		"KEEPER_ANCHOR_INTERVAL":         "environment KEEPER_ANCHOR_INTERVAL",
		"KEEPER_WEBHOOK_ALLOW_PRIVATE":   "environment KEEPER_WEBHOOK_ALLOW_PRIVATE",
		"KEEPER_BATCH_MAX_ITEMS":         "default",
	} {
		assert.Equal(t, want, setting(t, &c, env).Source.String(), env)
	}
}

func TestSettingsShowEveryValueButNoSecret(t *testing.T) {
	c, err := Load(lookup(map[string]string{
		"KEEPER_STORE_URL":       "postgres://keeper:hunter2@db:5432/keeper?sslmode=require",
		"KEEPER_API_TOKEN":       "tok-hunter3",
		"KEEPER_EVM_RPC_URLS":    "https://a.example/v1/KEY-A,https://b.example",
		"KEEPER_SOLANA_RPC_URL":  "https://s.example/?api-key=KEY-B",
		"KEEPER_LEDGER_URL":      "https://ledger:hunter4@ledger.example/v1?token=KEY-C",
		"KEEPER_DEV_TEMPORAL_DB": "postgres://temporal:hunter5@db/temporal",
		"KEEPER_BATCH_MAX_ITEMS": "100",
	}))
	require.NoError(t, err)
	var all strings.Builder
	for _, s := range c.Settings() {
		all.WriteString(s.Env + "=" + s.Value + "\n")
	}
	for _, secret := range []string{"hunter2", "tok-hunter3", "KEY-A", "KEY-B", "hunter4", "KEY-C", "hunter5"} {
		assert.NotContains(t, all.String(), secret)
	}
	for env, want := range map[string]string{
		"KEEPER_STORE_URL":       "postgres://keeper:xxxxx@db:5432/keeper?sslmode=require",
		"KEEPER_API_TOKEN":       "[redacted]",
		"KEEPER_EVM_RPC_URLS":    "https://a.example/…,https://b.example",
		"KEEPER_LEDGER_URL":      "https://ledger:xxxxx@ledger.example/v1?token=xxxxx",
		"KEEPER_BATCH_MAX_ITEMS": "100",
		"KEEPER_API_TOKEN_FILE":  "",
	} {
		assert.Equal(t, want, setting(t, &c, env).Value, env)
	}
	assert.Equal(t, "tok-hunter3", c.APIToken, "the value itself is still in force")
}

// Both chains' RPC settings come from one generator: the same six
// settings, named alike, with the same flags.
func TestEtherLinkAndSolanaTakeTheSameRPCSettings(t *testing.T) {
	var c Config
	knobs := map[string]Knob{}
	for _, k := range c.Knobs() {
		knobs[k.Env] = k
	}
	for _, s := range []string{"URL", "URLS", "TRUST", "MAX_LAG", "CONNECTIONS", "RATE"} {
		for _, chain := range []string{"EVM", "SOLANA"} {
			k, ok := knobs["KEEPER_"+chain+"_RPC_"+s]
			if assert.True(t, ok, "KEEPER_%s_RPC_%s", chain, s) {
				assert.Equal(t, strings.ToLower(chain+"-rpc-"+strings.ReplaceAll(s, "_", "-")), k.Flag)
			}
		}
	}
	for _, k := range c.Knobs() {
		assert.NotContains(t, k.Env, "ETHERLINK_RPC", "EtherLink's RPC settings have one name each")
	}
}
