package config

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Each of these settings takes 0 as "use the default", and its consumer
// takes the default for anything not above 0: a negative value is refused
// here, naming the variable and the value, rather than silently defaulted.
func TestANegativeValueOfASettingWhoseZeroTakesTheDefaultIsRefused(t *testing.T) {
	for env, want := range map[string]string{
		"KEEPER_MAX_BACKLOG":            "KEEPER_MAX_BACKLOG: must be 0 (4 × KEEPER_MAX_PENDING) or at least KEEPER_MAX_PENDING (10000), got -1",
		"KEEPER_MAX_IN_FLIGHT":          "KEEPER_MAX_IN_FLIGHT: must not be negative (0 takes the default), got -1",
		"KEEPER_EVM_RPC_CONNECTIONS":    "KEEPER_EVM_RPC_CONNECTIONS: must not be negative (0 takes the default), got -1",
		"KEEPER_SOLANA_RPC_CONNECTIONS": "KEEPER_SOLANA_RPC_CONNECTIONS: must not be negative (0 takes the default), got -1",
		// Read as milliseconds, which are refused below 0 as they are parsed.
		"KEEPER_ETHERLINK_CONFIRM_POLL_MS": `KEEPER_ETHERLINK_CONFIRM_POLL_MS="-1": not a non-negative number of milliseconds`,
		"KEEPER_SOLANA_CONFIRM_POLL_MS":    `KEEPER_SOLANA_CONFIRM_POLL_MS="-1": not a non-negative number of milliseconds`,
		"KEEPER_EVM_RESUBMIT_MS":           `KEEPER_EVM_RESUBMIT_MS="-1": not a non-negative number of milliseconds`,
		"KEEPER_DEV_EVM_BLOCK_MS":          `KEEPER_DEV_EVM_BLOCK_MS="-1": not a non-negative number of milliseconds`,
		"KEEPER_DEV_SOLANA_SLOT_MS":        `KEEPER_DEV_SOLANA_SLOT_MS="-1": not a non-negative number of milliseconds`,
	} {
		t.Run(env, func(t *testing.T) {
			load := func(v string) error {
				_, err := Load(func(k string) string { return map[string]string{env: v}[k] })
				return err
			}
			require.NoError(t, load("0"), "0 takes the default")
			require.EqualError(t, load("-1"), want)
		})
	}
}

func TestANegativeBacklogIsRefusedEvenBelowANegativePendingLimit(t *testing.T) {
	_, err := Load(func(k string) string {
		return map[string]string{"KEEPER_MAX_PENDING": "-5", "KEEPER_MAX_BACKLOG": "-1"}[k]
	})
	require.EqualError(t, err, "KEEPER_MAX_BACKLOG: must not be negative (0 takes the default), got -1")
}
