package verify

import (
	"slices"
	"strings"

	"github.com/keeperhq/keeper/receipt"
)

// The mainnets an anchor counts on as a production network. Any other
// network is a test network, and every verifier output names it as one
// (docs/receipts.md).
const (
	EtherLinkMainnet     = "eip155:42793"
	SolanaMainnet        = "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp"
	etherLinkShadownet   = "eip155:127823"
	etherLinkGhostnet    = "eip155:128123"
	solanaDevnetNetwork  = "solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1"
	solanaTestnetNetwork = "solana:4uhcVJyU9pJkvQyS88uRDiswHXSCkY3z"
)

// NetworkName names a CAIP-2 network for people: "EtherLink mainnet",
// "EtherLink testnet, a test network", "a test Solana cluster". Testnet
// reports whether it is anything but a mainnet keeper anchors on.
func NetworkName(network string) (name string, testnet bool) {
	switch network {
	case receipt.LocalEVMNetwork:
		return "keeper dev's local chain, a test network", true
	case EtherLinkMainnet:
		return "EtherLink mainnet", false
	case SolanaMainnet:
		return "Solana mainnet-beta", false
	case etherLinkShadownet:
		return "EtherLink Shadownet testnet, a test network", true
	case etherLinkGhostnet:
		return "EtherLink Ghostnet testnet, a test network", true
	case solanaDevnetNetwork:
		return "Solana devnet, a test network", true
	case solanaTestnetNetwork:
		return "Solana testnet, a test network", true
	}
	switch {
	case strings.HasPrefix(network, "eip155:"):
		return "a test EVM network", true
	case strings.HasPrefix(network, "solana:"):
		return "a test Solana cluster", true
	}
	return "a test network", true
}

// DescribeNetwork is a network as verifiers print it: its CAIP-2 id and
// its name ("eip155:42793 (EtherLink mainnet)").
func DescribeNetwork(network string) string {
	name, _ := NetworkName(network)
	return network + " (" + name + ")"
}

// DefaultClocks are the networks whose block times a verifier trusts by
// default for the time bound: the public mainnets keeper anchors on.
// Anything else (a testnet, a local chain, a chain the operator runs,
// whose timestamps are its own) counts only when the verifier names it in
// Options.Clocks.
var DefaultClocks = []string{EtherLinkMainnet, SolanaMainnet}

// trustsClock reports whether the verifier trusts the block times of
// network, where chain's anchor was read: a default clock, or one
// Options.Clocks names by its CAIP-2 id or by chain name (whatever network
// the verifier's endpoints for that chain are on).
func (o Options) trustsClock(chain, network string) bool {
	return network != "" && (slices.Contains(DefaultClocks, network) || slices.Contains(o.Clocks, network) || slices.Contains(o.Clocks, chain))
}

// PublicEndpoints are public JSON-RPC endpoints of the mainnets keeper
// knows, asked when a verifier is given none for an anchor's network:
// two for Solana mainnet-beta, whose block times rest on endpoints
// agreeing (docs/trust.md, Whose clocks count).
var PublicEndpoints = map[string][]string{
	EtherLinkMainnet: {"https://node.mainnet.etherlink.com"},
	SolanaMainnet:    {"https://api.mainnet-beta.solana.com", "https://solana-rpc.publicnode.com"},
}
