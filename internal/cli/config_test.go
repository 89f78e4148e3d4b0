package cli_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// row is the line of `keeper config`'s output for the setting env, its
// columns apart: the variable, the value, the source.
func row(t *testing.T, out, env string) (value, source string) {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[0] == env {
			return f[1], strings.Join(f[2:], " ")
		}
	}
	t.Fatalf("keeper config prints no %s:\n%s", env, out)
	return "", ""
}

func TestConfigPrintsEachSettingsValueAndWhereItCameFrom(t *testing.T) {
	out, errOut, err := keeper(t, "config", "--dev", "--evm-network", "etherlink-testnet", "--anchor-interval", "5s",
		"--etherlink-rpc-rate", "20", "--evm-rpc-urls", "https://rpc.example/v1/KEY-A",
		"--store-url", "postgres://keeper:hunter2@db/keeper", "--api-token", "tok-hunter3")
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^SETTING +VALUE +SOURCE$`, out)
	for env, want := range map[string][2]string{
		"KEEPER_ANCHOR_INTERVAL":         {"5s", "flag --anchor-interval"},
		"KEEPER_EVM_RPC_RATE":            {"20", "flag --etherlink-rpc-rate (deprecated: use --evm-rpc-rate)"},
		"KEEPER_EVM_CHAIN_ID":            {"127823", "preset KEEPER_EVM_NETWORK=etherlink-testnet"},
		"KEEPER_LOG_CHECKPOINT_INTERVAL": {"500ms", "preset keeper dev"},
		"KEEPER_BATCH_MAX_ITEMS":         {"16384", "default"},
		"KEEPER_LOG_KEY_FILE":            {`""`, "default"},
		"KEEPER_STORE_URL":               {"postgres://keeper:xxxxx@db/keeper", "flag --store-url"},
		"KEEPER_API_TOKEN":               {"[redacted]", "flag --api-token"},
		"KEEPER_EVM_RPC_URLS":            {"https://rpc.example/…", "flag --evm-rpc-urls"},
	} {
		value, source := row(t, out, env)
		assert.Equal(t, want, [2]string{value, source}, env)
	}
	// Where cobra prints pflag's line: stderr, or the output a test set.
	assert.Contains(t, out+errOut, "Flag --etherlink-rpc-rate has been deprecated, use --evm-rpc-rate")
	for _, secret := range []string{"hunter2", "tok-hunter3", "KEY-A"} {
		assert.NotContains(t, out+errOut, secret)
	}
}

func TestConfigNamesTheVariableAFormerNameCameFromAndWarnsOnce(t *testing.T) {
	t.Setenv("KEEPER_ETHERLINK_RPC_CONNECTIONS", "8")
	out, errOut, err := keeper(t, "config")
	require.NoError(t, err)
	value, source := row(t, out, "KEEPER_EVM_RPC_CONNECTIONS")
	assert.Equal(t, "8", value)
	assert.Equal(t, "environment KEEPER_ETHERLINK_RPC_CONNECTIONS (deprecated: use KEEPER_EVM_RPC_CONNECTIONS)", source)
	assert.Equal(t, 1, strings.Count(errOut, "KEEPER_ETHERLINK_RPC_CONNECTIONS is deprecated: it still sets KEEPER_EVM_RPC_CONNECTIONS"), errOut)
	assert.NotContains(t, errOut, "not a keeper setting", "a former name is no unknown variable")
}
