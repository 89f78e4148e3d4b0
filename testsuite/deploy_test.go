package testsuite

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.yaml.in/yaml/v3"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/testkit"
)

// composeFile is the part of docker-compose.yml the deployment test reads;
// YAML anchors and merge keys are resolved by the decoder.
type composeFile struct {
	Services map[string]struct {
		Image       string            `yaml:"image"`
		Build       any               `yaml:"build"`
		Command     []string          `yaml:"command"`
		Environment map[string]string `yaml:"environment"`
		Healthcheck *struct {
			Test []string `yaml:"test"`
		} `yaml:"healthcheck"`
		Deploy struct {
			Replicas int `yaml:"replicas"`
		} `yaml:"deploy"`
	} `yaml:"services"`
}

func TestDockerComposeRunsTwoWorkersAndAnAPIWithHealthChecksAndOnlySettingsKeeperReads(t *testing.T) {
	raw, err := os.ReadFile("../docker-compose.yml")
	require.NoError(t, err)
	var c composeFile
	require.NoError(t, yaml.Unmarshal(raw, &c))
	for _, name := range []string{"postgres", "temporal", "temporal-ui", "keeper-worker", "keeper-api"} {
		require.Contains(t, c.Services, name)
	}
	assert.Equal(t, 2, c.Services["keeper-worker"].Deploy.Replicas, "two workers share the task queues")
	assert.Equal(t, []string{"worker"}, c.Services["keeper-worker"].Command)
	assert.Equal(t, []string{"api"}, c.Services["keeper-api"].Command)

	var knobs []string
	cfg := config.Default()
	for _, k := range cfg.Knobs() {
		knobs = append(knobs, k.Env)
	}
	for name, svc := range c.Services {
		if name == "temporal-ui" {
			continue
		}
		assert.NotNil(t, svc.Healthcheck, "%s has a health check", name)
		if !strings.HasPrefix(name, "keeper-") {
			continue
		}
		assert.Contains(t, svc.Environment["KEEPER_STORE_URL"], "@postgres:5432/", "%s shares the PostgreSQL store", name)
		for k := range svc.Environment {
			switch {
			case strings.HasPrefix(k, "KEEPER_"):
				assert.True(t, slices.Contains(knobs, k), "%s sets %s, which keeper does not read", name, k)
			case strings.HasPrefix(k, "TEMPORAL_"):
				assert.True(t, slices.Contains(testkit.TemporalEnv, k), "%s sets %s, which the SDK's envconfig does not read", name, k)
			default:
				t.Errorf("%s sets %s, which neither keeper nor the SDK reads", name, k)
			}
		}
		// The SDK reads the Temporal settings as the services set them.
		opts, err := envconfig.LoadClientOptions(envconfig.LoadClientOptionsRequest{EnvLookup: testkit.EnvMap(svc.Environment), DisableFile: true})
		require.NoError(t, err, name)
		assert.Equal(t, "temporal:7233", opts.HostPort, name)
		assert.Equal(t, "default", opts.Namespace, name)
	}

	docker, err := os.ReadFile("../Dockerfile")
	require.NoError(t, err)
	for _, line := range strings.Split(string(docker), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "ENV" {
			for _, kv := range f[1:] {
				if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "KEEPER_") {
					assert.True(t, slices.Contains(knobs, k), "the Dockerfile sets %s, which keeper does not read", k)
				}
			}
		}
	}
}
