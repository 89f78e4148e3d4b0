package config

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// HasChain reports whether chain is configured.
func (c *Config) HasChain(chain string) bool {
	for _, ch := range c.Chains {
		if ch == chain {
			return true
		}
	}
	return false
}

// Where the local chains of `keeper dev` keep their funded keys: the
// defaults of KEEPER_EVM_KEY_FILE and KEEPER_SOLANA_KEY_FILE. The local chains
// (dev/localnet) write them; the adapters read them.
const (
	DevKeyDir            = "chains"
	DevEVMKeyFileName    = "devchain.key"
	DevSolanaKeyFileName = "solana-devnet-payer.json"
)

// chainKnobs are the settings of which chains keeper anchors on.
func (c *Config) chainKnobs() []Knob {
	return []Knob{
		{"chains", "KEEPER_CHAINS", "etherlink,solana", Node | LocalChains,
			"chains evidence may ask for (comma-separated): etherlink, solana, stub",
			&c.Chains},
		{"stub-confirm-ms", "KEEPER_STUB_CONFIRM_MS", "1000", Node,
			"stub chain: time from broadcast to finality",
			msKnob{&c.StubConfirmDelay}},
	}
}

// NetworkPresets applies KEEPER_EVM_NETWORK's preset, and the polling
// budget of KEEPER_SOLANA_CLUSTER's public clusters, to every setting they
// cover that was not given explicitly: in the environment Load read, or as
// a flag (recorded by Bind's flags, or reported by changed, which may be
// nil). Each setting a preset sets has it as its source.
func (c *Config) NetworkPresets(changed func(flag string) bool) {
	given := c.explicit(changed)
	c.pollPresets(given)
	c.evmPreset(given)
}

// RPCEndpoints are the several providers of one chain (chains/rpcpool).
type RPCEndpoints struct {
	URLs   []string // more than one: a pool; empty: the single RPC URL
	Trust  string   // "all" (every healthy endpoint must agree on a receipt) or 1-based positions in URLs, e.g. "1,3"
	MaxLag int      // blocks or slots behind the best head before an endpoint is unhealthy; 0: the chain's default
}

// TrustPositions reads Trust: nil for "all".
func (r RPCEndpoints) TrustPositions() ([]int, error) {
	if t := strings.TrimSpace(r.Trust); t == "" || t == "all" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(r.Trust, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > max(len(r.URLs), 1) {
			return nil, fmt.Errorf("%q is not all or positions in the URL list (1 to %d)", r.Trust, max(len(r.URLs), 1))
		}
		out = append(out, n)
	}
	return out, nil
}

// validate checks the list against the single URL setting.
func (r RPCEndpoints) validate(single, prefix string) error {
	if len(r.URLs) > 0 && single != "" && single != r.URLs[0] {
		return fmt.Errorf("%s_RPC_URL and %s_RPC_URLS are both set: set only the list (its first endpoint is the one logged and dialled first)", prefix, prefix)
	}
	for i, u := range r.URLs {
		if !httpURL(u) {
			return fmt.Errorf("%s_RPC_URLS: endpoint %d is not an http(s) URL", prefix, i+1)
		}
	}
	if _, err := r.TrustPositions(); err != nil {
		return fmt.Errorf("%s_RPC_TRUST: %v", prefix, err)
	}
	if r.MaxLag < 0 {
		return fmt.Errorf("%s_RPC_MAX_LAG must not be negative", prefix)
	}
	return nil
}

// httpURL reports whether u is an http(s) URL with a host.
func httpURL(u string) bool {
	pu, err := url.Parse(u)
	return err == nil && (pu.Scheme == "http" || pu.Scheme == "https") && pu.Host != ""
}

// rpcChain is what one chain's RPC settings are made from: the prefix of
// their names, the words their help differs in, and the fields they set.
type rpcChain struct {
	prefix    string // of the flags (evm: --evm-rpc-url) and, upper-cased, the variables (KEEPER_EVM_RPC_URL)
	name      string // EtherLink, Solana
	local     string // what `keeper dev` runs without an endpoint, and the URL other commands use
	agreement string // what several providers must agree on to confirm an anchor
	lag       string // the head, in the chain's units, a provider may lag behind the best
	maxLag    int
	lagNote   string // why maxLag is its default
	rateNote  string // about the public endpoint's quota

	url         *string
	endpoints   *RPCEndpoints
	connections *int
	rate        *int
	archive     *string // nil: the chain has no archive setting
}

// rpcKnobs are a chain's RPC settings: its endpoint or endpoints, whom of
// several to trust, how hard to call them, and its archive endpoint.
func rpcKnobs(ch rpcChain) []Knob {
	flag := func(s string) string { return ch.prefix + "-rpc-" + s }
	env := func(s string) string {
		return "KEEPER_" + strings.ToUpper(strings.ReplaceAll(flag(s), "-", "_"))
	}
	uses := Node | LocalChains
	knobs := []Knob{
		{flag("url"), env("url"), "", uses,
			ch.name + " JSON-RPC endpoint; empty: `keeper dev` runs " + ch.local,
			ch.url},
		{flag("urls"), env("urls"), "", uses,
			"several " + ch.name + " JSON-RPC providers, comma-separated, instead of " + env("url") + ": signed " +
				"transactions go to every healthy one, reads to the first healthy one, failing over " +
				"(docs/chains.md, Several RPC providers)",
			&ch.endpoints.URLs},
		{flag("trust"), env("trust"), "all", Node,
			"with several providers, whose " + ch.agreement + " confirm an anchor: all (every healthy provider " +
				"must report the same) or positions in " + env("urls") + ", e.g. 1 or 1,3",
			&ch.endpoints.Trust},
		{flag("max-lag"), env("max-lag"), strconv.Itoa(ch.maxLag), Node,
			"with several providers, one whose " + ch.lag + " than this behind the best is unhealthy: no " +
				"reads, no broadcasts, no say on " + ch.agreement + ch.lagNote,
			&ch.endpoints.MaxLag},
		{flag("connections"), env("connections"), "4", Node,
			"concurrent status calls to the " + ch.name + " endpoint",
			ch.connections},
		{flag("rate"), env("rate"), "0", Node,
			"requests a second to the " + ch.name + " endpoint, shared by the submitter, the status poller and " +
				"the backfill scanner" + ch.rateNote + "; a 429 pauses them for its Retry-After; 0 = no cap",
			ch.rate},
	}
	if ch.archive != nil {
		knobs = append(knobs, Knob{ch.prefix + "-archive-rpc-url", archiveEnv(ch.prefix), "", Worker,
			ch.name + " JSON-RPC endpoint of an archive node (one that keeps every block's state): wallet " +
				"backfill asks it for a wallet's balances at a block whose state the node no longer has, such " +
				"as the block before the wallet's history; empty: that opening balance is derived back from " +
				"the balance at the end of the scan, and not checked " +
				"([Backfill](backfill.md#balances-on-a-node-that-keeps-recent-state-only))",
			ch.archive})
	}
	return knobs
}

// archiveEnv is the variable of a chain's archive endpoint.
func archiveEnv(prefix string) string {
	return "KEEPER_" + strings.ToUpper(prefix) + "_ARCHIVE_RPC_URL"
}
