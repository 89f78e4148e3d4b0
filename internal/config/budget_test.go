package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThePublicNetworksPresetsGiveEachChainAPollingBudgetThatFitsItsEndpointUnlessGiven(t *testing.T) {
	for _, k := range []string{"KEEPER_CONFIRM_POLL_MS", "KEEPER_ETHERLINK_CONFIRM_POLL_MS", "KEEPER_ETHERLINK_HEAD_POLL_MS", "KEEPER_SOLANA_CONFIRM_POLL_MS", "KEEPER_SOLANA_HEAD_POLL_MS"} {
		t.Setenv(k, "")
	}
	t.Setenv("KEEPER_EVM_NETWORK", "custom")
	t.Setenv("KEEPER_SOLANA_CLUSTER", "custom")
	c, err := Load(nil)
	require.NoError(t, err)
	c.NetworkPresets(nil)
	for _, chain := range []string{"etherlink", "solana", "stub"} {
		assert.Equal(t, time.Second, c.ConfirmPollFor(chain), "%s: the common confirm poll", chain)
		assert.Equal(t, 250*time.Millisecond, c.HeadPollFor(chain), "%s: a quarter of it", chain)
	}

	t.Setenv("KEEPER_EVM_NETWORK", "etherlink-mainnet")
	t.Setenv("KEEPER_SOLANA_CLUSTER", "mainnet-beta")
	c, err = Load(nil)
	require.NoError(t, err)
	c.NetworkPresets(nil)
	for _, chain := range []string{"etherlink", "solana"} {
		assert.Equal(t, 4*time.Second, c.ConfirmPollFor(chain), chain)
		assert.Equal(t, 2*time.Second, c.HeadPollFor(chain), chain)
		// The busiest minute: a new head at every probe, so a probe and a
		// round (one request for up to 100 or 256 transactions) each.
		// EtherLink's public endpoint takes 1,000 requests a minute,
		// Solana's 600 (240 of one method).
		assert.Equal(t, 60, 2*int(time.Minute/c.HeadPollFor(chain)), chain)
	}
	assert.Equal(t, time.Second, c.ConfirmPollFor("stub"), "the stub chain keeps the common one")

	t.Setenv("KEEPER_ETHERLINK_HEAD_POLL_MS", "0")
	t.Setenv("KEEPER_SOLANA_CONFIRM_POLL_MS", "10000")
	c, err = Load(nil)
	require.NoError(t, err)
	c.NetworkPresets(nil)
	assert.Zero(t, c.HeadPollFor("etherlink"), "explicit settings win: 0 is no head probe at all")
	assert.Equal(t, 4*time.Second, c.ConfirmPollFor("etherlink"))
	assert.Equal(t, 10*time.Second, c.ConfirmPollFor("solana"))
	assert.Equal(t, 2*time.Second, c.HeadPollFor("solana"))
}

func TestTheCommonConfirmPollSetsEveryChainsPollUnlessTheChainHasItsOwn(t *testing.T) {
	env := map[string]string{"KEEPER_CONFIRM_POLL_MS": "30000", "KEEPER_SOLANA_HEAD_POLL_MS": "1000"}
	c, err := Load(func(k string) string { return env[k] })
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, c.ConfirmPollFor("etherlink"), "KEEPER_CONFIRM_POLL_MS=30000")
	assert.Equal(t, 7500*time.Millisecond, c.HeadPollFor("etherlink"))
	assert.Equal(t, 30*time.Second, c.ConfirmPollFor("solana"))
	assert.Equal(t, time.Second, c.HeadPollFor("solana"))

	env["KEEPER_ETHERLINK_CONFIRM_POLL_MS"] = "soon"
	_, err = Load(func(k string) string { return env[k] })
	assert.ErrorContains(t, err, "KEEPER_ETHERLINK_CONFIRM_POLL_MS")
}

func TestAWorkerServesHealthOnTheAPIsDefaultPortUnlessToldAndAnAPIOnItsOwnAddress(t *testing.T) {
	c := Default()
	assert.Equal(t, "127.0.0.1:8081", c.HealthAddrFor(false), "keeper worker: the API's default port")
	assert.Empty(t, c.HealthAddrFor(true), "keeper api and keeper dev: on the API's address alone")

	c.HealthAddr = "0.0.0.0:9000"
	assert.Equal(t, "0.0.0.0:9000", c.HealthAddrFor(false))
	assert.Equal(t, "0.0.0.0:9000", c.HealthAddrFor(true), "and beside the API when set to another address")
	c.HealthAddr = c.HTTPAddr
	assert.Empty(t, c.HealthAddrFor(true), "the API's own address is not listened on twice")
}
