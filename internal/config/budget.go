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

// DefaultWorkerHealthAddr is where `keeper worker` serves /health and
// /readyz unless KEEPER_HEALTH_ADDR says otherwise: the API's default
// address, so one probe address fits a node of either kind.
const DefaultWorkerHealthAddr = "127.0.0.1:8081"

// HealthAddrFor is where a process serves /health and /readyz beside its
// API, if any: KEEPER_HEALTH_ADDR when set, else DefaultWorkerHealthAddr
// for a process without the API; "" when the API's address serves them
// alone.
func (c *Config) HealthAddrFor(hasAPI bool) string {
	switch {
	case c.HealthAddr != "" && (!hasAPI || c.HealthAddr != c.HTTPAddr):
		return c.HealthAddr
	case hasAPI:
		return ""
	}
	return DefaultWorkerHealthAddr
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
	apply := func(p *ChainPoll, preset pollPreset, prefix string) {
		if !given[prefix+"_CONFIRM_POLL_MS"] {
			p.Confirm = OptionalDuration{D: preset.confirm, Set: true}
		}
		if !given[prefix+"_HEAD_POLL_MS"] {
			p.Head = OptionalDuration{D: preset.head, Set: true}
		}
	}
	if _, ok := evmNetworks[c.EVM.Network]; ok {
		apply(&c.EtherlinkPoll, etherlinkPoll, "KEEPER_ETHERLINK")
	}
	if c.Solana.Cluster != "" && c.Solana.Cluster != "custom" {
		apply(&c.SolanaPoll, solanaPoll, "KEEPER_SOLANA")
	}
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }
