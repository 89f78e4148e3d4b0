package config

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/receipt"
)

func TestTheConfigurationPageHasTheCurrentConfigTable(t *testing.T) {
	page, err := os.ReadFile("../../docs/configuration.md")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(page), MarkdownTable()), "docs/configuration.md's config table is stale: paste the output of `go run ./cmd/keeper config --markdown`")
}

func TestEnvironmentOverridesDefaults(t *testing.T) {
	env := map[string]string{"KEEPER_BATCH_MAX_ITEMS": "1", "KEEPER_POLL_MS": "250", "KEEPER_DRAIN_TIMEOUT": "3s", "KEEPER_CHAINS": " stub , "}
	c, err := Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, 1, c.BatchMaxItems)
	assert.Equal(t, 250*time.Millisecond, c.PollInterval)
	assert.Equal(t, 3*time.Second, c.DrainTimeout)
	assert.Equal(t, []string{"stub"}, c.Chains)
	assert.Equal(t, 16384, Default().BatchMaxItems)
}

func TestBadSettingsNameTheVariable(t *testing.T) {
	for env, val := range map[string]string{
		"KEEPER_BATCH_MAX_ITEMS": "0", "KEEPER_POLL_MS": "soon", "KEEPER_CHAINS": "bitcoin", "KEEPER_DRAIN_TIMEOUT": "10",
		"KEEPER_LOG_FORMAT": "xml",
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

func TestAStoreURLThatIsNotPostgreSQLIsRefusedWithoutEchoingIt(t *testing.T) {
	withStoreURL := func(u string) (Config, error) {
		return Load(func(k string) string { return map[string]string{"KEEPER_STORE_URL": u}[k] })
	}
	for _, u := range []string{"mysql://keeper:hunter2@db/keeper", "keeper:hunter2@db", "/var/lib/keeper.db"} {
		_, err := withStoreURL(u)
		require.Error(t, err, u)
		assert.Contains(t, err.Error(), "KEEPER_STORE_URL")
		assert.NotContains(t, err.Error(), "hunter2")
	}
	for _, u := range []string{"", "postgres://keeper:hunter2@db/keeper", "postgresql://db/keeper?sslmode=require"} {
		c, err := withStoreURL(u)
		require.NoError(t, err, u)
		assert.Equal(t, u, c.StoreURL)
	}
}

func TestHelpNeverShowsTheStoreURLOrTokenFromTheEnvironment(t *testing.T) {
	env := map[string]string{"KEEPER_STORE_URL": "postgres://keeper:hunter2@db/keeper", "KEEPER_API_TOKEN": "tok-hunter3"}
	c, err := Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	fs := pflag.NewFlagSet("keeper api", pflag.ContinueOnError)
	c.Bind(fs, Everything)
	help := fs.FlagUsages()
	assert.Contains(t, help, "--store-url")
	assert.NotContains(t, help, "hunter2")
	assert.NotContains(t, help, "tok-hunter3")
	assert.Equal(t, "postgres://keeper:hunter2@db/keeper", c.StoreURL, "the value itself is still in force")
}

func TestCodecCORSOriginsMustBeBareOrigins(t *testing.T) {
	load := func(v string) error {
		_, err := Load(func(k string) string {
			if k == "KEEPER_CODEC_CORS_ORIGINS" {
				return v
			}
			return ""
		})
		return err
	}
	require.NoError(t, load("http://127.0.0.1:8233, https://temporal.example"))
	for _, bad := range []string{"*", "127.0.0.1:8233", "http://127.0.0.1:8233/", "https://temporal.example/ui", "ftp://x", "http://u:p@x"} {
		err := load(bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "KEEPER_CODEC_CORS_ORIGINS")
	}
}

// withPresets loads env (nothing else of the process's environment) and
// applies the network presets, as every command does after its flags.
func withPresets(t *testing.T, env map[string]string) Config {
	t.Helper()
	c, err := Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	c.NetworkPresets(nil)
	return c
}

func TestAnEtherLinkNetworkPresetSetsWhatWasNotGiven(t *testing.T) {
	c := withPresets(t, map[string]string{"KEEPER_EVM_NETWORK": "etherlink-testnet"})
	assert.EqualValues(t, 127823, c.EVM.ChainID)
	assert.Zero(t, c.EVM.Confirmations, "final at the finalized block")
	assert.Equal(t, 16, c.EVM.RPCRate, "the public endpoint's 1,000 requests a minute")
	assert.LessOrEqual(t, c.Backfill.EVMChunkBlocks, 500)

	env := map[string]string{"KEEPER_EVM_NETWORK": "etherlink-testnet", "KEEPER_EVM_CHAIN_ID": "1337", "KEEPER_EVM_RPC_RATE": "50"}
	c, err := Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	c.NetworkPresets(func(flag string) bool { return flag == "evm-confirmations" })
	c.EVM.Confirmations = 3 // as the flag set it
	c.NetworkPresets(func(flag string) bool { return flag == "evm-confirmations" })
	assert.EqualValues(t, 1337, c.EVM.ChainID, "explicit settings win")
	assert.Equal(t, 50, c.EVM.RPCRate)
	assert.Equal(t, 3, c.EVM.Confirmations)

	_, err = Load(func(k string) string { return map[string]string{"KEEPER_EVM_NETWORK": "etherlink-devnet"}[k] })
	require.ErrorContains(t, err, "KEEPER_EVM_NETWORK")
}

// Without a preset the EVM chain id is keeper dev's local chain's, which
// no public network has: a node pointed at EtherLink with no preset and no
// chain id refuses it at start instead of assuming mainnet.
func TestTheEVMChainIDIsTheLocalChainsUnlessAPresetOrTheSettingSaysOtherwise(t *testing.T) {
	c := withPresets(t, map[string]string{"KEEPER_EVM_NETWORK": "custom"})
	assert.EqualValues(t, receipt.LocalEVMChainID, c.EVM.ChainID)

	c = withPresets(t, map[string]string{"KEEPER_EVM_NETWORK": "etherlink-mainnet"})
	assert.EqualValues(t, 42793, c.EVM.ChainID, "EtherLink mainnet's")
}

func TestTheEtherLinkPresetsPayNoTipResignDropsAfterTenBlocksWatchFinalityAndCapLogs(t *testing.T) {
	c := withPresets(t, map[string]string{"KEEPER_EVM_NETWORK": "custom"})
	assert.False(t, c.EVM.NoTip, "elsewhere: today's tip")
	assert.Zero(t, c.EVM.BlockTime, "elsewhere: re-signed after the resubmit timeout only")
	assert.Equal(t, 30*time.Minute, c.EVM.FinalityStall)
	assert.Equal(t, 10_000, c.Backfill.EVMMaxLogs)

	c = withPresets(t, map[string]string{"KEEPER_EVM_NETWORK": "etherlink-mainnet"})
	assert.True(t, c.EVM.NoTip, "EtherLink's sequencer ignores the tip")
	assert.Equal(t, 500*time.Millisecond, c.EVM.BlockTime)
	assert.Equal(t, 10*time.Minute, c.EVM.FinalityStall)
	assert.Equal(t, 5000, c.Backfill.EVMMaxLogs, "the public endpoint's 5,000 logs per eth_getLogs")
	assert.LessOrEqual(t, c.Backfill.EVMChunkBlocks, 500)

	c = withPresets(t, map[string]string{
		"KEEPER_EVM_NETWORK": "etherlink-mainnet", "KEEPER_EVM_NO_TIP": "false", "KEEPER_EVM_BLOCK_MS": "2000",
		"KEEPER_EVM_FINALITY_STALL_MS": "60000", "KEEPER_BACKFILL_EVM_MAX_LOGS": "1000",
	})
	assert.False(t, c.EVM.NoTip, "explicit settings win")
	assert.Equal(t, 2*time.Second, c.EVM.BlockTime)
	assert.Equal(t, time.Minute, c.EVM.FinalityStall)
	assert.Equal(t, 1000, c.Backfill.EVMMaxLogs)
}

func TestSolanaClusterAndPriorityFeeSettings(t *testing.T) {
	load := func(env map[string]string) (Config, error) {
		return Load(func(k string) string { return env[k] })
	}
	c, err := load(nil)
	require.NoError(t, err)
	assert.Equal(t, "custom", c.Solana.Cluster, "no cluster check unless asked")
	assert.Zero(t, c.Solana.PriorityFee)
	assert.EqualValues(t, 1_000_000, c.Solana.MaxPriorityFee, "priced from recent fees by default")

	c, err = load(map[string]string{"KEEPER_SOLANA_CLUSTER": "mainnet-beta", "KEEPER_SOLANA_PRIORITY_FEE": "5000", "KEEPER_SOLANA_MAX_PRIORITY_FEE": "200000"})
	require.NoError(t, err)
	assert.Equal(t, "mainnet-beta", c.Solana.Cluster)
	assert.EqualValues(t, 5000, c.Solana.PriorityFee)
	assert.EqualValues(t, 200_000, c.Solana.MaxPriorityFee)

	c, err = load(map[string]string{"KEEPER_SOLANA_PRIORITY_FEE": "5000", "KEEPER_SOLANA_MAX_PRIORITY_FEE": "0"})
	require.NoError(t, err, "a fixed fee")
	assert.EqualValues(t, 5000, c.Solana.PriorityFee)

	for env, bad := range map[string]map[string]string{
		"KEEPER_SOLANA_CLUSTER":          {"KEEPER_SOLANA_CLUSTER": "mainnet"},
		"KEEPER_SOLANA_MAX_PRIORITY_FEE": {"KEEPER_SOLANA_PRIORITY_FEE": "300000", "KEEPER_SOLANA_MAX_PRIORITY_FEE": "200000"},
		"KEEPER_SOLANA_PRIORITY_FEE":     {"KEEPER_SOLANA_PRIORITY_FEE": "-1"},
	} {
		_, err := load(bad)
		require.ErrorContains(t, err, env, "%v", bad)
	}
}

// Backfill's archive endpoint is EtherLink's (rpcKnobs names it like the
// chain's other RPC settings), an http(s) URL, and shown without the key a
// provider puts in its path.
func TestAnArchiveEndpointIsAnHTTPURLShownWithoutItsKey(t *testing.T) {
	c, err := Load(func(k string) string {
		return map[string]string{"KEEPER_EVM_ARCHIVE_RPC_URL": "https://archive.example/v2/KEY-D"}[k]
	})
	require.NoError(t, err)
	assert.Equal(t, "https://archive.example/v2/KEY-D", c.EVM.ArchiveRPCURL)
	assert.Equal(t, "https://archive.example/…", setting(t, &c, "KEEPER_EVM_ARCHIVE_RPC_URL").Value)
	assert.Equal(t, "evm-archive-rpc-url", setting(t, &c, "KEEPER_EVM_ARCHIVE_RPC_URL").Flag)
	assert.Empty(t, Default().EVM.ArchiveRPCURL, "none by default")

	_, err = Load(func(k string) string {
		return map[string]string{"KEEPER_EVM_ARCHIVE_RPC_URL": "archive.example/v2/KEY-E"}[k]
	})
	require.ErrorContains(t, err, "KEEPER_EVM_ARCHIVE_RPC_URL: not an http(s) URL")
	assert.NotContains(t, err.Error(), "KEY-E")
}

func TestSeveralRPCProvidersPerChainAndWhomToTrust(t *testing.T) {
	load := func(env map[string]string) (Config, error) {
		return Load(func(k string) string { return env[k] })
	}
	c, err := load(map[string]string{
		"KEEPER_EVM_RPC_URLS":    "https://a.example/v1/KEY-A, https://b.example",
		"KEEPER_EVM_RPC_TRUST":   "2",
		"KEEPER_SOLANA_RPC_URLS": "https://s1.example,https://s2.example",
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"https://a.example/v1/KEY-A", "https://b.example"}, c.EVM.RPC.URLs)
	trust, err := c.EVM.RPC.TrustPositions()
	require.NoError(t, err)
	assert.Equal(t, []int{2}, trust)
	trust, err = c.Solana.RPC.TrustPositions()
	require.NoError(t, err)
	assert.Nil(t, trust, "all by default")
	assert.Equal(t, 10, c.EVM.RPC.MaxLag)
	assert.Equal(t, 150, c.Solana.RPC.MaxLag)

	for env, bad := range map[string]map[string]string{
		"KEEPER_EVM_RPC_TRUST":    {"KEEPER_EVM_RPC_URLS": "https://a.example,https://b.example", "KEEPER_EVM_RPC_TRUST": "3"},
		"KEEPER_SOLANA_RPC_URLS":  {"KEEPER_SOLANA_RPC_URLS": "https://a.example,ftp://b.example/KEY-B"},
		"KEEPER_EVM_RPC_URL":      {"KEEPER_EVM_RPC_URL": "https://c.example", "KEEPER_EVM_RPC_URLS": "https://a.example,https://b.example"},
		"KEEPER_SOLANA_RPC_TRUST": {"KEEPER_SOLANA_RPC_TRUST": "first"},
	} {
		_, err := load(bad)
		require.ErrorContains(t, err, env, "%v", bad)
		assert.NotContains(t, err.Error(), "KEY-B", "a provider's key stays out of the error")
	}
}

func TestTheWebhookRetryWindowIsThreeDaysAndItsFormerVariableStillSetsIt(t *testing.T) {
	assert.Equal(t, 72*time.Hour, Default().Webhook.RetryWindow)
	load := func(env map[string]string) Config {
		t.Helper()
		c, err := Load(func(k string) string { return env[k] })
		require.NoError(t, err)
		return c
	}
	assert.Equal(t, 96*time.Hour, load(map[string]string{"KEEPER_WEBHOOK_RETRY_WINDOW": "96h"}).Webhook.RetryWindow)
	assert.Equal(t, 12*time.Hour, load(map[string]string{"KEEPER_WEBHOOK_RETRY_FOR": "12h"}).Webhook.RetryWindow, "the deprecated name")
	assert.Equal(t, 96*time.Hour, load(map[string]string{"KEEPER_WEBHOOK_RETRY_WINDOW": "96h", "KEEPER_WEBHOOK_RETRY_FOR": "12h"}).Webhook.RetryWindow,
		"the current name wins")
	_, err := Load(func(k string) string { return map[string]string{"KEEPER_WEBHOOK_RETRY_FOR": "soon"}[k] })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "KEEPER_WEBHOOK_RETRY_FOR", "the error names the variable that was set")

	c := Default()
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.Bind(fs, Everything)
	require.NoError(t, fs.Parse([]string{"--webhook-retry-for=5h"}))
	assert.Equal(t, 5*time.Hour, c.Webhook.RetryWindow, "the former flag too")
}

func TestTheWebhookRotationGraceIsADayAndAtMostAWeek(t *testing.T) {
	assert.Equal(t, 24*time.Hour, Default().Webhook.RotationGrace)
	for _, bad := range []string{"169h", "-1s"} {
		_, err := Load(func(k string) string { return map[string]string{"KEEPER_WEBHOOK_ROTATION_GRACE": bad}[k] })
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "KEEPER_WEBHOOK_ROTATION_GRACE")
	}
	c, err := Load(func(k string) string { return map[string]string{"KEEPER_WEBHOOK_ROTATION_GRACE": "0"}[k] })
	require.NoError(t, err)
	assert.Zero(t, c.Webhook.RotationGrace)
}

func TestHTTPTimeoutsAndTheComputeAcceptDeadlineHaveTheirDefaultsAndAreConfigurable(t *testing.T) {
	d := Default()
	assert.Equal(t, 5*time.Second, d.HTTP.ReadTimeout)
	assert.Equal(t, 5*time.Second, d.HTTP.WriteTimeout)
	assert.Equal(t, 60*time.Second, d.HTTP.IdleTimeout)
	assert.Equal(t, 60*time.Second, d.HTTP.LongRequest)
	assert.Equal(t, 2*time.Second, d.Epochs.AcceptTimeout)

	env := map[string]string{"KEEPER_HTTP_READ_TIMEOUT": "7s", "KEEPER_HTTP_WRITE_TIMEOUT": "9s", "KEEPER_HTTP_IDLE_TIMEOUT": "2m",
		"KEEPER_HTTP_LONG_TIMEOUT": "5m", "KEEPER_COMPUTE_ACCEPT_TIMEOUT": "500ms"}
	c, err := Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, HTTPConfig{ReadTimeout: 7 * time.Second, WriteTimeout: 9 * time.Second, IdleTimeout: 2 * time.Minute, LongRequest: 5 * time.Minute}, c.HTTP)
	assert.Equal(t, 500*time.Millisecond, c.Epochs.AcceptTimeout)

	for _, name := range []string{"KEEPER_HTTP_READ_TIMEOUT", "KEEPER_HTTP_WRITE_TIMEOUT", "KEEPER_HTTP_IDLE_TIMEOUT", "KEEPER_HTTP_LONG_TIMEOUT", "KEEPER_COMPUTE_ACCEPT_TIMEOUT"} {
		_, err := Load(func(k string) string {
			if k == name {
				return "0s"
			}
			return ""
		})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), name)
	}
}

func TestTheBacklogCeilingIsAtLeastMaxPendingAndTheIntakeWaitIsNotNegative(t *testing.T) {
	load := func(env map[string]string) (Config, error) { return Load(func(k string) string { return env[k] }) }
	c, err := load(nil)
	require.NoError(t, err)
	assert.Equal(t, 0, c.MaxBacklog, "0: 4 × KEEPER_MAX_PENDING")
	assert.Equal(t, 50*time.Millisecond, c.IntakeWait)

	c, err = load(map[string]string{"KEEPER_MAX_PENDING": "100", "KEEPER_MAX_BACKLOG": "100", "KEEPER_INTAKE_WAIT": "0"})
	require.NoError(t, err)
	assert.Equal(t, 100, c.MaxBacklog)
	assert.Zero(t, c.IntakeWait)

	_, err = load(map[string]string{"KEEPER_MAX_PENDING": "100", "KEEPER_MAX_BACKLOG": "99"})
	assert.ErrorContains(t, err, "KEEPER_MAX_BACKLOG")
	_, err = load(map[string]string{"KEEPER_INTAKE_WAIT": "-1ms"})
	assert.ErrorContains(t, err, "KEEPER_INTAKE_WAIT")
}

func TestMaxAttemptsDefaultsToNoLimitAndRefusesANegativeOne(t *testing.T) {
	c := Default()
	require.Equal(t, 0, c.MaxAttempts, "a transient failure never dead-letters unless the operator sets a limit")
	c.Chains = []string{"stub"}
	require.NoError(t, c.Validate())
	c.MaxAttempts = -1
	require.ErrorContains(t, c.Validate(), "KEEPER_MAX_ATTEMPTS")
}
