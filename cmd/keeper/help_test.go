package main

import (
	"bytes"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
)

// commands is every command of the tree under c, c included.
func commands(c *cobra.Command) []*cobra.Command {
	out := []*cobra.Command{c}
	for _, sub := range c.Commands() {
		out = append(out, commands(sub)...)
	}
	return out
}

// help is what `keeper <path> --help` prints.
func help(t *testing.T, path []string) string {
	t.Helper()
	r := root()
	var out bytes.Buffer
	r.SetOut(&out)
	r.SetErr(&out)
	r.SetArgs(append(slices.Clone(path), "--help"))
	require.NoError(t, r.Execute(), strings.Join(path, " "))
	return out.String()
}

// A flag line of --help: the flag, its value's placeholder if any, then at
// least two spaces before its usage.
var flagLine = regexp.MustCompile(`^\s+(?:-\w, )?--([\w-]+)(?: (\S.*?))?\s{2,}\S`)

// placeholders are the ones pflag derives from the values' types, and the
// words keeper's flags choose.
var placeholders = regexp.MustCompile(`^(string|strings|stringArray|int|int64|uint64|float|float64Slice|duration|list|[a-z]+)$`)

// Every value placeholder --help shows is a type or one lower-case word,
// never words pflag took from a back-quoted part of the usage.
func TestEveryCommandsHelpShowsATypeOrOneWordAsEachValuesPlaceholder(t *testing.T) {
	seen := 0
	for _, c := range commands(root()) {
		path := strings.Fields(c.CommandPath())[1:]
		for _, line := range strings.Split(help(t, path), "\n") {
			m := flagLine.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			seen++
			if m[2] != "" {
				assert.Regexp(t, placeholders, m[2], "keeper %s --help: --%s", strings.Join(path, " "), m[1])
			}
		}
	}
	assert.Greater(t, seen, 200, "the flag lines were found")
}

// flags are the names of the flags c takes.
func flags(c *cobra.Command) []string {
	var out []string
	c.Flags().VisitAll(func(f *pflag.Flag) { out = append(out, f.Name) })
	return out
}

// knobFlags are the flags of c that set a configuration knob (a command's
// own flag may share a knob's name: `keeper submit --chains`).
func knobFlags(c *cobra.Command) []string {
	env := map[string]string{}
	for _, k := range (&config.Config{}).Knobs() {
		env[k.Flag] = k.Env
	}
	var out []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if e, ok := env[f.Name]; ok && strings.HasSuffix(f.Usage, "(env "+e+")") {
			out = append(out, f.Name)
		}
	})
	return out
}

func find(t *testing.T, path string) *cobra.Command {
	t.Helper()
	c, rest, err := root().Find(strings.Fields(path))
	require.NoError(t, err)
	require.Empty(t, rest, path)
	return c
}

// Each command takes the flags of the settings it reads and no others, so
// its --help lists only what changes what it does.
func TestEachCommandTakesTheFlagsOfTheSettingsItReadsOnly(t *testing.T) {
	base := []string{"data-dir", "log-level", "log-format"}
	exactly := map[string][]string{
		"devserver":        append(slices.Clone(base), "dev-temporal-port", "dev-ui-port", "db", "tls-cert", "tls-key", "tls-client-ca"),
		"devchains":        append(slices.Clone(base), "chains", "evm-rpc-url", "evm-rpc-urls", "evm-chain-id", "dev-evm-port", "dev-evm-block-ms", "solana-rpc-url", "solana-rpc-urls", "dev-solana-port", "dev-solana-slot-ms"),
		"log keygen":       append(slices.Clone(base), "log-origin", "log-key-file"),
		"log export":       append(slices.Clone(base), "store-url", "log-checkpoint-interval"),
		"log trust":        append(slices.Clone(base), "store-url"),
		"log trust retire": append(slices.Clone(base), "store-url", "log-origin", "log-key-file"),
		"log audit":        nil,
		"verify":           nil,
		"submit":           nil,
		"status":           nil,
		"receipt":          nil,
		"redrive":          nil,
		"backfill add":     nil,
		"backfill status":  nil,
		"healthcheck":      nil,
	}
	for path, want := range exactly {
		assert.ElementsMatch(t, want, knobFlags(find(t, path)), "keeper %s", path)
	}

	worker, api := flags(find(t, "worker")), flags(find(t, "api"))
	for _, f := range []string{"activity-workers", "log-key-file", "backfill-reconcile-ms", "chains", "store-url", "api-token", "health-addr"} {
		assert.Contains(t, worker, f, "keeper worker")
	}
	for _, f := range []string{"http-addr", "max-pending", "intake-wait", "batch-max-items", "anchor-interval", "compute-accept-timeout", "pprof", "dev-temporal-port", "dev-evm-port"} {
		assert.NotContains(t, worker, f, "keeper worker reads no --%s", f)
	}
	for _, f := range []string{"http-addr", "max-pending", "batch-max-items", "anchor-interval", "chains", "store-url", "api-token"} {
		assert.Contains(t, api, f, "keeper api")
	}
	for _, f := range []string{"activity-workers", "log-key-file", "backfill-reconcile-ms", "pprof", "dev-temporal-port", "dev-evm-port"} {
		assert.NotContains(t, api, f, "keeper api reads no --%s", f)
	}

	all := knobFlags(find(t, "dev"))
	assert.Len(t, all, len((&config.Config{}).Knobs()), "keeper dev runs everything: it takes every setting")
	for _, path := range []string{"bench", "bench backfill", "bench epoch"} {
		assert.ElementsMatch(t, all, knobFlags(find(t, path)), "keeper %s runs a whole stack", path)
	}
	assert.ElementsMatch(t, all, knobFlags(find(t, "config")), "keeper config shows what any command's flags would set")
}

// `keeper --help` lists its commands in groups: running keeper, the
// clients, the evidence log, and the dev stack's.
func TestKeeperHelpGroupsItsCommands(t *testing.T) {
	r := root()
	groups := map[string][]string{}
	for _, c := range r.Commands() {
		if c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		require.NotEmpty(t, c.GroupID, "keeper %s is in a group", c.Name())
		groups[c.GroupID] = append(groups[c.GroupID], c.Name())
	}
	assert.ElementsMatch(t, []string{"worker", "api", "witness", "config", "healthcheck"}, groups["run"])
	assert.ElementsMatch(t, []string{"submit", "status", "receipt", "verify", "backfill", "redrive"}, groups["client"])
	assert.ElementsMatch(t, []string{"log"}, groups["log"])
	assert.ElementsMatch(t, []string{"dev", "devserver", "devchains", "bench"}, groups["dev"])

	out := help(t, nil)
	titles := []string{"Running keeper:", "Clients", "The evidence log:", "Development"}
	last := -1
	for _, title := range titles {
		i := strings.Index(out, "\n"+title)
		require.Greater(t, i, last, "%q after the groups before it in:\n%s", title, out)
		last = i
	}
	assert.Regexp(t, `(?s)Running keeper:\n(\s+\S.*\n)*\s+worker\s`, out)
	assert.Regexp(t, `(?s)Development[^\n]*\n(\s+\S.*\n)*\s+devchains\s`, out)
}
