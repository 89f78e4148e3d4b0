package config

import (
	"slices"
	"strings"

	"github.com/keeperhq/keeper/internal/redact"
)

// Origin is the kind of place a setting's value came from.
type Origin int

// The places a value comes from, in rising precedence.
const (
	FromDefault Origin = iota // the knob's default
	FromPreset                // a preset: KEEPER_EVM_NETWORK's, a public Solana cluster's, `keeper dev`'s
	FromEnv                   // a KEEPER_ environment variable, as Load's lookup read it
	FromFlag                  // a command-line flag
)

// Source is where a setting's value came from.
type Source struct {
	Origin Origin
	// Name is the variable or flag (without its dashes) that set the
	// value, or the preset that did, e.g. KEEPER_EVM_NETWORK=etherlink-mainnet.
	Name string
	// Current is the setting's current variable or flag when Name is a
	// former name of it (deprecated); "" otherwise.
	Current string
}

// String is the source as `keeper config` shows it, e.g. "environment
// KEEPER_ETHERLINK_RPC_RATE (deprecated: use KEEPER_EVM_RPC_RATE)".
func (s Source) String() string {
	var out string
	switch s.Origin {
	case FromDefault:
		return "default"
	case FromPreset:
		return "preset " + s.Name
	case FromEnv:
		out = "environment " + s.Name
	case FromFlag:
		out = "flag --" + s.Name
	}
	switch {
	case s.Current == "":
	case s.Origin == FromFlag:
		out += " (deprecated: use --" + s.Current + ")"
	default:
		out += " (deprecated: use " + s.Current + ")"
	}
	return out
}

// record notes src as where the setting env got its value.
func (c *Config) record(env string, src Source) {
	if c.sources == nil {
		c.sources = map[string]Source{}
	}
	c.sources[env] = src
}

// SourceOf is where the setting whose variable is env got its value.
func (c *Config) SourceOf(env string) Source {
	if s, ok := c.sources[env]; ok {
		return s
	}
	return Source{Origin: FromDefault}
}

// explicit reports, by variable, whether each setting was given: by the
// environment Load read, by a flag, or by a flag changed reports (nil:
// none beyond those recorded). Presets leave those settings be.
func (c *Config) explicit(changed func(flag string) bool) map[string]bool {
	given := map[string]bool{}
	for _, k := range c.Knobs() {
		o := c.SourceOf(k.Env).Origin
		given[k.Env] = o == FromEnv || o == FromFlag || (changed != nil && changed(k.Flag))
	}
	return given
}

// preset applies one preset's values to the settings not given
// explicitly, and records it as their source.
type preset struct {
	c     *Config
	given map[string]bool
	name  string // as `keeper config` shows it
}

// set runs apply, which sets the setting env, unless env was given.
func (p preset) set(env string, apply func()) {
	if p.given[env] {
		return
	}
	apply()
	p.c.record(env, Source{Origin: FromPreset, Name: p.name})
}

// Setting is one setting as `keeper config` prints it.
type Setting struct {
	Env, Flag string
	Value     string // secrets redacted
	Source    Source
}

// Settings lists every setting of c, in Knobs' order, with its value in
// force and where that came from. A value that may hold a secret is
// redacted: it is fit for a terminal, a log or a ticket.
func (c *Config) Settings() []Setting {
	var out []Setting
	for _, k := range c.Knobs() {
		out = append(out, Setting{Env: k.Env, Flag: k.Flag, Value: redacted(k.Env, get(k.ptr)), Source: c.SourceOf(k.Env)})
	}
	return out
}

// tokens are the settings that are a secret whole: shown as set, never
// what they hold.
var tokens = []string{"KEEPER_API_TOKEN"}

// secrets are the settings whose values may hold a secret, and how they
// are shown: a database or ledger URL without its password and secret
// parameters, an RPC endpoint as its scheme and host alone (providers put
// API keys in the path).
var secrets = map[string]func(string) string{
	"KEEPER_STORE_URL":       redact.URL,
	"KEEPER_DEV_TEMPORAL_DB": redact.URL,
	"KEEPER_LEDGER_URL":      redact.URL,
	"KEEPER_EVM_RPC_URL":     redact.Endpoint,
	"KEEPER_EVM_RPC_URLS":    redact.Endpoint,
	"KEEPER_SOLANA_RPC_URL":  redact.Endpoint,
	"KEEPER_SOLANA_RPC_URLS": redact.Endpoint,
	// Archive nodes are mostly a paid provider's, its key in the path.
	"KEEPER_EVM_ARCHIVE_RPC_URL": redact.Endpoint,
}

// redacted is value of the setting env fit to print. Any other value that
// holds a URL loses its password and secret parameters too; a list is
// redacted item by item.
func redacted(env, value string) string {
	switch {
	case value == "":
		return ""
	case slices.Contains(tokens, env):
		return "[redacted]"
	}
	show, ok := secrets[env]
	if !ok {
		if !strings.Contains(value, "://") {
			return value
		}
		show = redact.URL
	}
	items := strings.Split(value, ",")
	for i, v := range items {
		items[i] = show(v)
	}
	return strings.Join(items, ",")
}
