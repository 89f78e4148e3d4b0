package config

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheFormerProviderSettingIsRefusedNamingTheChainsToSet(t *testing.T) {
	for provider, chains := range map[string]string{
		"etherlink": "KEEPER_CHAINS=etherlink ", "solana": "KEEPER_CHAINS=solana ", "stub": "KEEPER_CHAINS=stub ",
		"multi": "KEEPER_CHAINS=etherlink,solana ", "bitcoin": "KEEPER_CHAINS=<etherlink, solana or stub",
	} {
		_, err := CheckEnvironment([]string{"PATH=/usr/bin", "KEEPER_PROVIDER=" + provider, "KEEPER_CHAINS=etherlink,solana"})
		require.Error(t, err, provider)
		assert.Contains(t, err.Error(), "KEEPER_PROVIDER is not a keeper setting", provider)
		assert.Contains(t, err.Error(), chains, provider)
	}
}

func TestTheFormerHTTPPortIsRefusedNamingTheAddressToSetButAServiceLinkOfTheSameNameIsNot(t *testing.T) {
	_, err := CheckEnvironment([]string{"KEEPER_HTTP_PORT=8081", "KEEPER_PROVIDER=multi"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "KEEPER_HTTP_ADDR=127.0.0.1:8081")
	assert.Contains(t, err.Error(), "KEEPER_HEALTH_ADDR")
	assert.Contains(t, err.Error(), "KEEPER_CHAINS=etherlink,solana", "every refusal at once")

	// A Service named keeper-http: Kubernetes sets KEEPER_HTTP_PORT to a URL.
	notes, err := CheckEnvironment([]string{"KEEPER_HTTP_PORT=tcp://10.96.0.12:8081"})
	require.NoError(t, err)
	require.Len(t, notes, 1)
	assert.True(t, notes[0].Debug)
}

func TestThePollSettingsAreKeeperSettings(t *testing.T) {
	notes, err := CheckEnvironment([]string{"KEEPER_POLL_MS=5000", "KEEPER_CONFIRM_POLL_MS=30000", "KEEPER_CHAINS=etherlink"})
	require.NoError(t, err)
	assert.Empty(t, notes)
}

func TestAnUnknownSettingIsReportedWithTheNearestKnownName(t *testing.T) {
	notes, err := CheckEnvironment([]string{"KEEPER_CONFRIM_POLL_MS=30000", "KEEPER_ETHERLNK_RPC_RATE=16", "KEEPER_API_URL=http://keeper:8081", "HOME=/root", "KEEPER_EMPTY="})
	require.NoError(t, err, "unknown names warn, they do not stop keeper")
	require.Len(t, notes, 2, "known names, other variables and empty values say nothing")
	assert.False(t, notes[0].Debug)
	assert.Equal(t, "KEEPER_CONFRIM_POLL_MS", notes[0].Name)
	assert.Contains(t, notes[0].Message, "the nearest one is KEEPER_CONFIRM_POLL_MS")
	assert.Contains(t, notes[1].Message, "the nearest one is KEEPER_EVM_RPC_RATE", "a former name's setting by its name now")
}

func TestKubernetesServiceLinksAreNotWarnedAbout(t *testing.T) {
	// What Kubernetes injects for Services named keeper, keeper-api and
	// keeper-worker-metrics (a named port "http").
	links := []string{
		"KEEPER_SERVICE_HOST=10.96.0.10", "KEEPER_SERVICE_PORT=8081", "KEEPER_PORT=tcp://10.96.0.10:8081",
		"KEEPER_PORT_8081_TCP=tcp://10.96.0.10:8081", "KEEPER_PORT_8081_TCP_PROTO=tcp", "KEEPER_PORT_8081_TCP_PORT=8081", "KEEPER_PORT_8081_TCP_ADDR=10.96.0.10",
		"KEEPER_API_SERVICE_HOST=10.96.0.11", "KEEPER_API_SERVICE_PORT=8081", "KEEPER_API_SERVICE_PORT_HTTP=8081", "KEEPER_API_PORT=tcp://10.96.0.11:8081",
		"KEEPER_API_PORT_8081_TCP=tcp://10.96.0.11:8081", "KEEPER_WORKER_METRICS_PORT_9464_UDP_ADDR=10.96.0.12",
	}
	notes, err := CheckEnvironment(links)
	require.NoError(t, err)
	require.Len(t, notes, len(links))
	for _, n := range notes {
		assert.True(t, n.Debug, "%s is a service link: debug only", n.Name)
	}
}

func TestEditDistance(t *testing.T) {
	assert.Equal(t, 0, editDistance("KEEPER_CHAINS", "KEEPER_CHAINS"))
	assert.Equal(t, 2, editDistance("KEEPER_CHIANS", "KEEPER_CHAINS"))
	assert.Equal(t, 3, editDistance("kitten", "sitting"))
	assert.Equal(t, 4, editDistance("", "abcd"))
}
