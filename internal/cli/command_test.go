package cli_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/config"
)

// configured runs a command built as `keeper dev` and `keeper worker` are,
// in the environment the test set, and reports whether its body ran and
// what it logged.
func configured(t *testing.T, name string) (ran bool, log string, err error) {
	t.Helper()
	var out bytes.Buffer
	cmd := cli.Configured(&cobra.Command{Use: name}, config.Everything, true, func(context.Context, *cobra.Command, *config.Config) error {
		ran = true
		return nil
	})
	cmd.SetArgs([]string{})
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err = cmd.Execute()
	return ran, out.String(), err
}

func TestKeeperDevWithTheFormerProviderSettingRefusesToStartNamingKEEPER_CHAINS(t *testing.T) {
	t.Setenv("KEEPER_PROVIDER", "etherlink")
	ran, _, err := configured(t, "dev")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "KEEPER_PROVIDER is not a keeper setting: set KEEPER_CHAINS=etherlink")
	assert.False(t, ran, "nothing started")
}

func TestAnUnknownKeeperVariableIsAWarningNamingTheNearestSettingAndAServiceLinkIsNot(t *testing.T) {
	t.Setenv("KEEPER_CONFRIM_POLL_MS", "30000")
	t.Setenv("KEEPER_API_SERVICE_HOST", "10.96.0.11")
	t.Setenv("KEEPER_API_PORT_8081_TCP", "tcp://10.96.0.11:8081")
	ran, log, err := configured(t, "worker")
	require.NoError(t, err)
	assert.True(t, ran, "a warning does not stop keeper")
	assert.Contains(t, log, `"level":"WARN"`)
	assert.Contains(t, log, "KEEPER_CONFRIM_POLL_MS is not a keeper setting and is ignored; the nearest one is KEEPER_CONFIRM_POLL_MS")
	assert.NotContains(t, log, "KEEPER_API_", "Kubernetes' service links: debug only")
}
