package config

import "fmt"

// formerName is a name a setting had before: its variable and its flag
// still set the setting, with a deprecation line, when the current name is
// not given (docs/configuration.md, Former names).
type formerName struct {
	env, flag string
	current   string // the setting's Env now
}

// formerNames are the settings' former names. EtherLink's RPC settings all
// read KEEPER_EVM_RPC_*, as the chain's other settings read KEEPER_EVM_*.
var formerNames = []formerName{
	{"KEEPER_WEBHOOK_RETRY_FOR", "webhook-retry-for", "KEEPER_WEBHOOK_RETRY_WINDOW"},
	{"KEEPER_ETHERLINK_RPC_CONNECTIONS", "etherlink-rpc-connections", "KEEPER_EVM_RPC_CONNECTIONS"},
	{"KEEPER_ETHERLINK_RPC_RATE", "etherlink-rpc-rate", "KEEPER_EVM_RPC_RATE"},
}

// formerNamesOf are the former names of the setting env.
func formerNamesOf(env string) []formerName {
	var out []formerName
	for _, f := range formerNames {
		if f.current == env {
			out = append(out, f)
		}
	}
	return out
}

// lookupEnv reads the setting env through getenv: its own variable, else
// a former name of it. Each former name that is set adds a deprecation
// line, whether it was used or, the current name being set too, ignored.
func (c *Config) lookupEnv(env string, getenv func(string) string) (name, value string) {
	name, value = env, getenv(env)
	for _, f := range formerNamesOf(env) {
		old := getenv(f.env)
		switch {
		case old == "":
		case value != "":
			c.deprecations = append(c.deprecations, fmt.Sprintf("%s is deprecated and ignored: %s, its current name, is set; unset %s", f.env, env, f.env))
		default:
			name, value = f.env, old
			c.deprecations = append(c.deprecations, fmt.Sprintf("%s is deprecated: it still sets %s, but set %s instead", f.env, env, env))
		}
	}
	return name, value
}

// current is canonical when name is a former name of it, else "".
func current(name, canonical string) string {
	if name == canonical {
		return ""
	}
	return canonical
}

// Deprecations are the lines to say, once, about the former names the
// environment Load read used: which name to set instead. (A former flag
// name says so itself when parsed.)
func (c *Config) Deprecations() []string { return c.deprecations }
