package verify_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/keeperhq/keeper/receipt/verify"
)

func TestOnlyTheTwoMainnetsAreNotNamedAsTestNetworks(t *testing.T) {
	for network, want := range map[string]string{
		"eip155:42793": "EtherLink mainnet",
		"solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp": "Solana mainnet-beta",
		"eip155:127823": "EtherLink Shadownet testnet, a test network",
		"eip155:128123": "EtherLink Ghostnet testnet, a test network",
		"solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1": "Solana devnet, a test network",
		"solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z": "Solana testnet, a test network",
		"eip155:1": "a test EVM network",
		"solana:CBZig35SGV9REGT1pyTQKLPHXBX1m7W1": "a test Solana cluster",
	} {
		name, test := verify.NetworkName(network)
		assert.Equal(t, want, name, network)
		assert.Equal(t, want != "EtherLink mainnet" && want != "Solana mainnet-beta", test, network)
	}
	assert.Equal(t, "eip155:42793 (EtherLink mainnet)", verify.DescribeNetwork("eip155:42793"))
}
