package deploy

import (
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/node"
)

// composeFile is the part of docker-compose.yml this test reads; the YAML
// anchors and merge keys are resolved by the decoder.
type composeFile struct {
	Services map[string]struct {
		Image     string `json:"image"`
		DependsOn map[string]struct {
			Condition string `json:"condition"`
		} `json:"depends_on"`
		Environment map[string]string `json:"environment"`
		Secrets     []string          `json:"secrets"`
		Command     any               `json:"command"`
		Volumes     []string          `json:"volumes"`
		Restart     string            `json:"restart"`
		StopGrace   string            `json:"stop_grace_period"`
		Healthcheck struct {
			Test     []string `json:"test"`
			Interval string   `json:"interval"`
		} `json:"healthcheck"`
	} `json:"services"`
	Secrets map[string]struct {
		File string `json:"file"`
	} `json:"secrets"`
}

func TestComposeRunsTheTemporalServerKeeperEmbedsAfterAdminToolsSetUpItsSchemas(t *testing.T) {
	raw, err := os.ReadFile("../docker-compose.yml")
	require.NoError(t, err)
	var c composeFile
	require.NoError(t, yaml.Unmarshal(raw, &c))
	gomod, err := os.ReadFile("../go.mod")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^\s*go\.temporal\.io/server v(\S+)`).FindSubmatch(gomod)
	require.NotNil(t, m, "go.mod requires the Temporal server keeper dev embeds")
	version := string(m[1])

	assert.Equal(t, "temporalio/server:"+version, c.Services["temporal"].Image, "the server keeper dev embeds, on its supported image")
	assert.Equal(t, "temporalio/admin-tools:"+version, c.Services["temporal-schema"].Image)
	assert.Equal(t, "temporalio/admin-tools:"+version, c.Services["temporal-namespace"].Image)
	assert.Equal(t, "postgres12", c.Services["temporal"].Environment["DB"])
	// The server does not start without its dynamic config file.
	dc := c.Services["temporal"].Environment["DYNAMIC_CONFIG_FILE_PATH"]
	require.Contains(t, c.Services["temporal"].Volumes, "./deploy/temporal/dynamicconfig.yaml:"+dc+":ro")
	raw, err = os.ReadFile("temporal/dynamicconfig.yaml")
	require.NoError(t, err)
	var settings map[string][]struct {
		Value       any            `json:"value"`
		Constraints map[string]any `json:"constraints"`
	}
	require.NoError(t, yaml.UnmarshalStrict(raw, &settings), "the dynamic config is in the server's format")
	assert.Equal(t, "service_completed_successfully", c.Services["temporal"].DependsOn["temporal-schema"].Condition, "the schemas are set up before the server starts")
	assert.Equal(t, "service_healthy", c.Services["temporal-schema"].DependsOn["postgres"].Condition)
	assert.Equal(t, "service_healthy", c.Services["temporal-namespace"].DependsOn["temporal"].Condition)
	// Both databases the server's environment names get their schema.
	script := c.Services["temporal-schema"].Command.([]any)[0].(string)
	for _, db := range []string{c.Services["temporal"].Environment["DBNAME"], c.Services["temporal"].Environment["VISIBILITY_DBNAME"]} {
		assert.Contains(t, script, db)
	}
	assert.Contains(t, script, "setup-schema")
	assert.Contains(t, script, "update-schema")
	assert.Regexp(t, `^temporalio/ui:2\.55\.`, c.Services["temporal-ui"].Image, "the Web UI keeper dev embeds")

	for _, name := range []string{"keeper-worker", "keeper-api"} {
		svc := c.Services[name]
		assert.Equal(t, "service_completed_successfully", svc.DependsOn["temporal-namespace"].Condition, "%s starts once its namespace exists", name)
		assert.Equal(t, "etherlink-testnet", defaults(svc.Environment["KEEPER_EVM_NETWORK"]), "%s: EtherLink's current testnet, Shadownet (127823)", name)
		assert.Contains(t, defaults(svc.Environment["KEEPER_EVM_RPC_URL"]), "shadownet", name)
		assert.NotContains(t, svc.Environment, "KEEPER_EVM_CHAIN_ID", "%s: the preset gives the chain id", name)
		assert.NotEmpty(t, svc.Environment["KEEPER_LOG_ORIGIN"], name)
	}
	// Both worker replicas sign the log with the one key of the secret.
	worker := c.Services["keeper-worker"]
	assert.Equal(t, "/run/secrets/log_key", worker.Environment["KEEPER_LOG_KEY_FILE"])
	assert.Contains(t, worker.Secrets, "log_key")
	assert.NotEmpty(t, c.Secrets["log_key"].File)
}

// keeper exits non-zero when it cannot go on by itself; compose starts it
// again, and stops it no sooner than its drain allows (docs/production.md,
// Restarts).
func TestComposeRestartsKeeperAndGivesItsDrainTimeToFinish(t *testing.T) {
	raw, err := os.ReadFile("../docker-compose.yml")
	require.NoError(t, err)
	var c composeFile
	require.NoError(t, yaml.Unmarshal(raw, &c))
	for _, name := range []string{"keeper-worker", "keeper-api"} {
		svc := c.Services[name]
		assert.Equal(t, "unless-stopped", svc.Restart, "%s is started again whenever it exits, unless stopped on purpose", name)

		drain := config.Default().DrainTimeout
		if v, ok := svc.Environment["KEEPER_DRAIN_TIMEOUT"]; ok {
			cfg, err := config.Load(func(k string) string {
				if k == "KEEPER_DRAIN_TIMEOUT" {
					return defaults(v)
				}
				return ""
			})
			require.NoError(t, err, name)
			drain = cfg.DrainTimeout
		}
		grace, err := time.ParseDuration(svc.StopGrace)
		require.NoError(t, err, "%s sets stop_grace_period", name)
		// keeper gives its connections up to 10 s more to close after the drain.
		assert.GreaterOrEqual(t, grace, drain+10*time.Second, "%s: SIGKILL comes after the drain", name)

		// A probe sees the 503 of a worker that stopped for good before its
		// process exits.
		interval, err := time.ParseDuration(svc.Healthcheck.Interval)
		require.NoError(t, err, name)
		assert.Contains(t, svc.Healthcheck.Test, "http://127.0.0.1:8081/readyz", name)
		assert.LessOrEqual(t, interval, node.FailedReadyHold, name)
	}
}

// The services keeper needs come back as keeper's own do: PostgreSQL,
// Temporal and its Web UI restart unless stopped on purpose; the one-shots
// (schemas, namespace) retry a failure a few times and stay exited once done.
func TestComposeRestartsEveryLongRunningService(t *testing.T) {
	raw, err := os.ReadFile("../docker-compose.yml")
	require.NoError(t, err)
	var c composeFile
	require.NoError(t, yaml.Unmarshal(raw, &c))
	oneShots := map[string]bool{"temporal-schema": true, "temporal-namespace": true}
	for name, svc := range c.Services {
		if oneShots[name] {
			assert.Equal(t, "on-failure:5", svc.Restart, "%s runs once: retried on failure, never started again once it exited 0", name)
			continue
		}
		assert.Equal(t, "unless-stopped", svc.Restart, "%s is started again whenever it exits, unless stopped on purpose", name)
	}
	for _, name := range []string{"postgres", "temporal", "temporal-ui", "keeper-worker", "keeper-api"} {
		assert.Contains(t, c.Services, name)
	}
}

// defaults is what compose makes of a value when the shell sets none of its
// variables: ${NAME:-default} becomes default.
func defaults(v string) string {
	return regexp.MustCompile(`\$\{[A-Z0-9_]+:-([^}]*)\}`).ReplaceAllString(v, "$1")
}
