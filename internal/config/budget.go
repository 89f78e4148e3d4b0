package config

import (
	"strconv"
	"time"
)

// The polling budget (docs/chains.md, Polling budget; docs/retries.md, status
// polling). While a batch awaits finality a chain's status poller asks the
// chain's head every head poll and runs a status round on each new head, and
// otherwise one confirm poll after the last round; while nothing awaits
// finality it asks nothing. The presets fit the public endpoints' quotas:
// EtherLink's 1,000 requests a minute, Solana's 100 requests per 10 seconds
// (40 of one method). At a new head on every probe (500 ms blocks, 400 ms
// slots) a 2 s head poll costs 30 head probes and 30 status rounds a minute.
var (
	etherlinkPoll = pollPreset{confirm: 4 * time.Second, head: 2 * time.Second}
	solanaPoll    = pollPreset{confirm: 4 * time.Second, head: 2 * time.Second}
)

type pollPreset struct{ confirm, head time.Duration }

// ChainPoll is one chain's polling budget; unset fields follow the common
// KEEPER_CONFIRM_POLL_MS.
type ChainPoll struct {
	Confirm OptionalDuration // a status round at least this often while a batch awaits finality
	Head    OptionalDuration // head probes this often meanwhile (0: none)
}

func (c *Config) chainPoll(chain string) ChainPoll {
	switch chain {
	case "etherlink":
		return c.EtherlinkPoll
	case "solana":
		return c.SolanaPoll
	}
	return ChainPoll{}
}

// ConfirmPollFor is how often chain's status poller runs a round while a
// batch awaits finality, when no new head starts one sooner.
func (c *Config) ConfirmPollFor(chain string) time.Duration {
	if p := c.chainPoll(chain).Confirm; p.Set && p.D > 0 {
		return p.D
	}
	return c.ConfirmPoll
}

// HeadPollFor is how often chain's head is probed while a batch awaits
// finality (0: never): KEEPER_<CHAIN>_HEAD_POLL_MS, else a quarter of the
// chain's confirm poll.
func (c *Config) HeadPollFor(chain string) time.Duration {
	if p := c.chainPoll(chain).Head; p.Set {
		return p.D
	}
	return max(c.ConfirmPollFor(chain)/4, time.Millisecond)
}

// pollPresets gives the chains of a public network (KEEPER_EVM_NETWORK's
// etherlink presets, KEEPER_SOLANA_CLUSTER's public clusters) the budget
// that fits its public endpoint, where not given.
func (c *Config) pollPresets(given map[string]bool) {
	apply := func(poll *ChainPoll, budget pollPreset, prefix, name string) {
		p := preset{c: c, given: given, name: name}
		p.set(prefix+"_CONFIRM_POLL_MS", func() { poll.Confirm = OptionalDuration{D: budget.confirm, Set: true} })
		p.set(prefix+"_HEAD_POLL_MS", func() { poll.Head = OptionalDuration{D: budget.head, Set: true} })
	}
	if _, ok := evmNetworks[c.EVM.Network]; ok {
		apply(&c.EtherlinkPoll, etherlinkPoll, "KEEPER_ETHERLINK", "KEEPER_EVM_NETWORK="+c.EVM.Network)
	}
	if c.Solana.Cluster != "" && c.Solana.Cluster != "custom" {
		apply(&c.SolanaPoll, solanaPoll, "KEEPER_SOLANA", "KEEPER_SOLANA_CLUSTER="+c.Solana.Cluster)
	}
}

// pollKnobs are the settings of the polling budget: how often a batch
// awaiting finality is looked up, and each chain's head probed.
func (c *Config) pollKnobs() []Knob {
	return []Knob{
		{"confirm-poll-ms", "KEEPER_CONFIRM_POLL_MS", "1000", Node,
			"how often the finality watcher looks up a batch awaiting finality (chains with a batched " +
				"status poller: once per poll round); each chain's unless KEEPER_<CHAIN>_CONFIRM_POLL_MS",
			msKnob{&c.ConfirmPoll}},
		{"etherlink-confirm-poll-ms", "KEEPER_ETHERLINK_CONFIRM_POLL_MS", "", Node,
			"polling budget: while a batch awaits finality on etherlink, a status round (one JSON-RPC " +
				"batch request per 100 transactions) at least this often; empty: KEEPER_CONFIRM_POLL_MS " +
				"(etherlink presets: " + ms(etherlinkPoll.confirm) + ")",
			optMsKnob{&c.EtherlinkPoll.Confirm}},
		{"etherlink-head-poll-ms", "KEEPER_ETHERLINK_HEAD_POLL_MS", "", Node,
			"polling budget: while a batch awaits finality on etherlink, eth_blockNumber this often, and a " +
				"new block starts a status round at once (docs/chains.md, Polling budget); empty: a quarter of " +
				"the chain's confirm poll (etherlink presets: " + ms(etherlinkPoll.head) +
				"); 0 = no head probe, rounds on the confirm poll alone",
			optMsKnob{&c.EtherlinkPoll.Head}},
		{"solana-confirm-poll-ms", "KEEPER_SOLANA_CONFIRM_POLL_MS", "", Node,
			"polling budget: while a batch awaits finality on solana, a status round (getSignatureStatuses " +
				"of up to 256 signatures) at least this often; empty: KEEPER_CONFIRM_POLL_MS (public clusters, " +
				"KEEPER_SOLANA_CLUSTER other than custom: " + ms(solanaPoll.confirm) + ")",
			optMsKnob{&c.SolanaPoll.Confirm}},
		{"solana-head-poll-ms", "KEEPER_SOLANA_HEAD_POLL_MS", "", Node,
			"polling budget: while a batch awaits finality on solana, getSlot this often, and a new slot " +
				"starts a status round at once; empty: a quarter of the chain's confirm poll (public clusters: " +
				ms(solanaPoll.head) + "); 0 = no head probe",
			optMsKnob{&c.SolanaPoll.Head}},
	}
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
