package architecture

import (
	"bytes"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/keeperhq/keeper"

// pkg is one package of the module as `go list` sees it, without its tests.
type pkg struct {
	Path     string   // import path relative to the module ("internal/store", "internal/chains/evm")
	Dir      string   // the directory of its files
	Main     bool     // a command: nothing can import it
	TestOnly bool     // tests and a doc.go only (testsuite, architecture, deploy): nothing to import
	Imports  []string // direct imports (module-relative where inside the module)
	Deps     []string // every package it links, transitively
}

// rule forbids packages matching from to import (or, with transitive, to
// link) packages matching to. Patterns are module-relative paths; "x/..."
// matches x and everything below it; a pattern starting with a domain
// matches an outside module's packages.
type rule struct {
	name       string
	from       []string
	except     []string // packages of from the rule does not apply to
	to         []string
	allow      []string // packages of to the rule lets through
	transitive bool
}

// Simulators and test aids live under dev/; only the dev binary (cmd/keeper),
// the benchmark, the replay recorder and tests may link them. Only devserver
// and those same packages may link the Temporal server.
var devOnly = []string{"internal/dev/...", "internal/devserver/...", "cmd/keeper", "internal/bench/...", "testsuite/...", "architecture/..."}

// production is the main package of the binary the Dockerfile builds and
// operators deploy.
const production = "cmd/keeperd"

// devStack is what `keeper dev` and `keeper bench` need and the production
// binary must not link, at any depth: the Temporal server and its Web UI,
// keeper's simulators and benchmark, the benchmark's plots, and the
// go-ethereum node behind the local EtherLink-like chain (its blockchain,
// EVM, state, databases, miner and peer-to-peer stack). The JSON-RPC
// client's packages (ethclient, rpc, core/types, crypto) are production's.
var devStack = []string{
	"go.temporal.io/server/...", "github.com/temporalio/ui-server/...",
	"internal/dev/...", "internal/devserver/...", "internal/bench/...", "cmd/keeper",
	"gonum.org/...",
	"github.com/ethereum/go-ethereum/node/...", "github.com/ethereum/go-ethereum/eth/...", "github.com/ethereum/go-ethereum/miner/...",
	"github.com/ethereum/go-ethereum/p2p/...", "github.com/ethereum/go-ethereum/core", "github.com/ethereum/go-ethereum/core/vm/...",
	"github.com/ethereum/go-ethereum/core/state/...", "github.com/ethereum/go-ethereum/core/rawdb/...", "github.com/ethereum/go-ethereum/core/txpool/...",
	"github.com/ethereum/go-ethereum/consensus/...", "github.com/ethereum/go-ethereum/ethdb/...", "github.com/ethereum/go-ethereum/trie/...",
	"github.com/ethereum/go-ethereum/triedb/...", "github.com/ethereum/go-ethereum/internal/ethapi/...",
	"github.com/cockroachdb/pebble/...", "github.com/syndtr/goleveldb/...",
}

// devStackAllowed are packages under devStack's patterns that production
// may link: go-ethereum's JSON-RPC client checks hosts with p2p/netutil,
// a leaf of the standard library only.
var devStackAllowed = []string{"github.com/ethereum/go-ethereum/p2p/netutil"}

// devStackLinks lists the packages of deps that belong to the dev stack.
func devStackLinks(deps []string) []string {
	var out []string
	for _, d := range deps {
		if matchAny(devStack, d) && !matchAny(devStackAllowed, d) {
			out = append(out, d)
		}
	}
	return out
}

// server is keeper's server side: what a program that only talks to keeper
// or checks its receipts should not link.
var server = []string{"internal/store/...", "internal/chains/...", "internal/workflows/...", "internal/starter/...", "internal/node/...", "internal/worker/...",
	"internal/anchor/...", "internal/backfill/...", "internal/epoch/...", "internal/webhook/...",
	"internal/config/...", "internal/telemetry/...", "internal/codec/...", "internal/cli/...", "internal/rewards/...", "internal/settlement/...", "internal/dev/...", "internal/devserver/..."}

var rules = []rule{
	{
		name: "workflows link nothing of keeper's records, chains, scanners, ledger, rewards or features: they call activities by name, with payloads of their own",
		from: []string{"internal/workflows/..."},
		to: []string{"internal/store/...", "internal/chains/...", "internal/settlement/...", "internal/rewards/...", "merkle/...",
			"internal/anchor/...", "internal/backfill/...", "internal/epoch/...", "internal/webhook/...",
			"internal/dev/...", "internal/starter/...", "internal/node/..."},
		transitive: true,
	},
	{
		name: "the records layer links no chain adapter, scanner, workflow or feature",
		from: []string{"internal/store/..."},
		to: []string{"internal/chains/...", "internal/workflows/...", "internal/dev/...", "internal/starter/...",
			"internal/anchor/...", "internal/backfill/...", "internal/epoch/...", "internal/webhook/..."},
		transitive: true,
	},
	{
		name:       "chain adapters and scanners link no store",
		from:       []string{"internal/chains/...", "internal/backfill/scan", "internal/backfill/evmscan", "internal/backfill/solscan"},
		to:         []string{"internal/store/...", "internal/anchor/...", "internal/workflows/..."},
		transitive: true,
	},
	{
		name:       "production packages link no simulator",
		from:       []string{"..."},
		except:     devOnly,
		to:         []string{"internal/dev/..."},
		transitive: true,
	},
	{
		name:       "only devserver, cmd/keeper, bench and tests link the Temporal server",
		from:       []string{"..."},
		except:     devOnly,
		to:         []string{"go.temporal.io/server/..."},
		transitive: true,
	},
	{
		name:       "the receipt format and its verifier link nothing of keeper's server: other programs import receipt/verify to check receipts",
		from:       []string{"receipt/..."},
		to:         append([]string{"internal/retry/...", "internal/urlpolicy/..."}, server...),
		transitive: true,
	},
	{
		name:       "the evidence log's formats and monitor link nothing of keeper's server: verifiers and monitors import them",
		from:       []string{"evlog/..."},
		to:         append([]string{"internal/retry/...", "internal/urlpolicy/..."}, server...),
		transitive: true,
	},
	{
		name: "chainread, the one reading of a chain's answer, links neither go-ethereum nor solana-go nor an HTTP client, and nothing of keeper's but the redactor: " +
			"the /verify page runs it compiled to WebAssembly (its HTTP caller alone, not built for the browser, links net/http)",
		from:       []string{"chainread/..."},
		to:         append([]string{"github.com/ethereum/...", "github.com/gagliardetto/...", "internal/retry/...", "internal/urlpolicy/...", "internal/strictjson"}, server...),
		transitive: true,
	},
	{
		name:       "the Go client links nothing of keeper's server, only the receipt format: other programs import it",
		from:       []string{"client/..."},
		to:         server,
		transitive: true,
	},
	{
		name:       "the API's bodies link nothing of keeper's server, only the receipt format: the Go client imports them",
		from:       []string{"api/..."},
		to:         server,
		transitive: true,
	},
	{
		name:       "only tests link the OpenAPI conformance check and kin-openapi",
		from:       []string{"..."},
		except:     []string{"internal/starter/openapitest"},
		to:         []string{"internal/starter/openapitest", "github.com/getkin/..."},
		transitive: true,
	},
	{
		name:       "the retry rules, the redactor, the URL policy and webhook signing are leaves",
		from:       []string{"internal/retry/...", "internal/redact/...", "internal/urlpolicy/...", "internal/webhooksign/..."},
		to:         []string{"..."},
		transitive: true,
	},
	{
		name:       "the Idempotency-Key header is a leaf: the Go client, the API and the ledger share it",
		from:       []string{"internal/idemkey/..."},
		to:         []string{"..."},
		transitive: true,
	},
	{
		name:       "problem details link nothing of keeper's but their wire type (api.Problem) and the strict JSON reader its receipts use: the API and the ledger answer with them",
		from:       []string{"internal/problem/..."},
		to:         []string{"internal/...", "client/..."},
		allow:      []string{"internal/strictjson"},
		transitive: true,
	},
}

func match(pattern, path string) bool {
	// Module-relative patterns and paths are made whole, so that "..." is
	// the module's packages and not the standard library's.
	whole := func(p string) string {
		if p == "..." {
			return module + "/..."
		}
		if strings.HasPrefix(p, "std:") || strings.Contains(strings.Split(p, "/")[0], ".") {
			return p
		}
		return module + "/" + p
	}
	pattern, path = whole(pattern), whole(path)
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return path == base || strings.HasPrefix(path, base+"/")
	}
	return path == pattern
}

func matchAny(patterns []string, path string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return match(p, path) })
}

// violations lists every import that breaks a rule, one line each.
func violations(pkgs []pkg, rules []rule) []string {
	var out []string
	for _, r := range rules {
		for _, p := range pkgs {
			if !matchAny(r.from, p.Path) || matchAny(r.except, p.Path) {
				continue
			}
			edges := p.Imports
			if r.transitive {
				edges = p.Deps
			}
			for _, to := range edges {
				inside := matchAny(r.from, to) && !matchAny(r.except, to) // a package of the rule's own group
				if matchAny(r.to, to) && !matchAny(r.allow, to) && !inside {
					out = append(out, fmt.Sprintf("%s → %s: %s", p.Path, to, r.name))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// load lists the module's packages (tests excluded) with `go list`.
func load(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Dir,Name,GoFiles,Imports,Deps", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	rel := func(p string) string {
		if p == module {
			return "."
		}
		if r, ok := strings.CutPrefix(p, module+"/"); ok {
			return r
		}
		if !strings.Contains(strings.Split(p, "/")[0], ".") {
			return "std:" + p // the standard library, kept apart from the module's packages
		}
		return p
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var raw struct {
			ImportPath    string
			Dir           string
			Name          string
			GoFiles       []string
			Imports, Deps []string
		}
		if err := dec.Decode(&raw); err == io.EOF {
			break
		} else {
			require.NoError(t, err)
		}
		p := pkg{Path: rel(raw.ImportPath), Dir: raw.Dir, Main: raw.Name == "main", TestOnly: len(raw.GoFiles) == 0 || len(raw.GoFiles) == 1 && raw.GoFiles[0] == "doc.go"}
		for _, i := range raw.Imports {
			p.Imports = append(p.Imports, rel(i))
		}
		for _, d := range raw.Deps {
			p.Deps = append(p.Deps, rel(d))
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

func TestKeepersPackagesFollowTheImportRules(t *testing.T) {
	pkgs := load(t)
	paths := make([]string, len(pkgs))
	for i, p := range pkgs {
		paths[i] = p.Path
	}
	// The rules name real packages: a rename that empties a rule fails here.
	for _, want := range []string{"internal/workflows", "internal/anchor", "internal/backfill", "internal/epoch", "internal/webhook", "internal/store", "internal/chains/evm", "internal/chains/solana", "internal/backfill/evmscan", "internal/node", "internal/worker", "internal/starter", "internal/retry", "internal/redact", "internal/dev/stub", "internal/devserver"} {
		assert.Contains(t, paths, want)
	}
	assert.Empty(t, violations(pkgs, rules), "forbidden imports (docs/architecture.md)")
}

// public are the packages other programs may import: the Go client, the wire
// types it shares with the API, the receipt format and its verifier, the
// Merkle tree receipts name, and the evidence log's formats and monitor.
// Everything else is keeper's own and lives under internal/, where the go
// command refuses it to other modules.
var public = []string{"api", "client", "receipt", "receipt/verify", "chainread", "merkle", "evlog", "evlog/audit", "evlog/trust"}

func TestEveryPackageButThePublicOnesIsInternal(t *testing.T) {
	pkgs := load(t)
	var outside []string
	for _, p := range pkgs {
		if p.Main || p.TestOnly || match("internal/...", p.Path) || matchAny(public, p.Path) {
			continue
		}
		outside = append(outside, p.Path)
	}
	assert.Empty(t, outside, "importable packages outside internal/ that are not in the public list (docs/architecture.md)")
	for _, want := range public {
		assert.Contains(t, pathsOf(pkgs), want, "a public package the list names is gone")
	}
}

func pathsOf(pkgs []pkg) []string {
	out := make([]string, len(pkgs))
	for i, p := range pkgs {
		out[i] = p.Path
	}
	return out
}

func TestTheServingPackagesLinkNoSimulatorAndNoTemporalServer(t *testing.T) {
	for _, p := range load(t) {
		if !matchAny([]string{"internal/node", "internal/worker", "internal/starter", "internal/anchor", "internal/epoch", "internal/webhook", "internal/workflows", "internal/store", "internal/chains/...", "internal/backfill/...", "internal/cli"}, p.Path) {
			continue
		}
		for _, d := range p.Deps {
			assert.False(t, match("internal/dev/...", d) || match("internal/devserver", d) || match("go.temporal.io/server/...", d), "%s links %s", p.Path, d)
		}
	}
}

func TestTheRulesCatchAForbiddenImport(t *testing.T) {
	graph := []pkg{
		{Path: "internal/workflows", Imports: []string{"internal/anchor"}, Deps: []string{"internal/anchor", "internal/store"}},
		{Path: "internal/store", Imports: []string{"internal/retry"}, Deps: []string{"internal/retry", "internal/chains", "internal/webhook"}},
		{Path: "internal/chains/evm", Imports: []string{"internal/chains"}, Deps: []string{"internal/chains", "internal/store"}},
		{Path: "internal/node", Imports: []string{"internal/worker"}, Deps: []string{"internal/worker", "internal/dev/stub", "go.temporal.io/server/temporal"}},
		{Path: "cmd/keeper", Imports: []string{"internal/dev/stub"}, Deps: []string{"internal/dev/stub", "go.temporal.io/server/temporal"}},
		{Path: "internal/retry", Deps: []string{"std:errors", "internal/chains"}},
	}
	assert.Equal(t, []string{
		"internal/chains/evm → internal/store: chain adapters and scanners link no store",
		"internal/node → go.temporal.io/server/temporal: only devserver, cmd/keeper, bench and tests link the Temporal server",
		"internal/node → internal/dev/stub: production packages link no simulator",
		"internal/retry → internal/chains: the retry rules, the redactor, the URL policy and webhook signing are leaves",
		"internal/store → internal/chains: the records layer links no chain adapter, scanner, workflow or feature",
		"internal/store → internal/webhook: the records layer links no chain adapter, scanner, workflow or feature",
		"internal/workflows → internal/anchor: workflows link nothing of keeper's records, chains, scanners, ledger, rewards or features: they call activities by name, with payloads of their own",
		"internal/workflows → internal/store: workflows link nothing of keeper's records, chains, scanners, ledger, rewards or features: they call activities by name, with payloads of their own",
	}, violations(graph, rules))
}

// find returns the package of the module at path, failing the test when
// there is none (a rename must rename the test's name for it too).
func find(t *testing.T, pkgs []pkg, path string) pkg {
	t.Helper()
	for _, p := range pkgs {
		if p.Path == path {
			return p
		}
	}
	require.FailNow(t, "no package "+path)
	return pkg{}
}

func TestTheProductionBinaryLinksNothingOfTheDevStack(t *testing.T) {
	pkgs := load(t)
	prod := find(t, pkgs, production)
	// It is the serving binary: a production main that lost its commands
	// would pass the check below by linking nothing.
	for _, want := range []string{"internal/cli", "internal/node", "internal/worker", "internal/starter", "internal/chains/evm", "internal/chains/solana", "receipt/verify", "go.temporal.io/sdk/client"} {
		assert.Contains(t, prod.Deps, want)
	}
	assert.Empty(t, devStackLinks(prod.Deps), "%s links the dev stack (docs/architecture.md)", production)

	// Every pattern names something the dev binary links, so that a pattern
	// gone stale (a package renamed upstream) cannot hide what replaced it.
	dev := find(t, pkgs, "cmd/keeper")
	for _, pattern := range devStack {
		if pattern == "cmd/keeper" {
			continue // the dev binary itself
		}
		assert.True(t, slices.ContainsFunc(dev.Deps, func(d string) bool { return match(pattern, d) }), "no package of cmd/keeper matches %s", pattern)
	}
}

func TestTheDevStackCheckCatchesTheDevStack(t *testing.T) {
	assert.Equal(t, []string{
		"go.temporal.io/server/temporal",
		"github.com/temporalio/ui-server/v2/server",
		"internal/dev/stub",
		"gonum.org/v1/plot",
		"github.com/ethereum/go-ethereum/core",
		"github.com/ethereum/go-ethereum/p2p/discover",
		"github.com/cockroachdb/pebble",
	}, devStackLinks([]string{
		"go.temporal.io/server/temporal", "go.temporal.io/sdk/client",
		"github.com/temporalio/ui-server/v2/server",
		"internal/dev/stub", "devcodec", "internal/node",
		"gonum.org/v1/plot",
		"github.com/ethereum/go-ethereum/core", "github.com/ethereum/go-ethereum/core/types", "github.com/ethereum/go-ethereum/ethclient",
		"github.com/ethereum/go-ethereum/p2p/netutil", "github.com/ethereum/go-ethereum/p2p/discover",
		"github.com/cockroachdb/pebble", "std:net",
	}))
}

// maxProductionSize is the most the production binary may weigh stripped,
// in bytes (docs/architecture.md, Two binaries); it weighed 46.8 MB when
// this was written.
const maxProductionSize = 60_000_000

// The dependency check above reads the package graph; this one builds the
// binary, stripped as the Dockerfile builds it, and reads the modules it
// records (what `go version -m` prints), so that the two agree.
func TestTheProductionBinaryIsSmallAndRecordsNoModuleOfTheDevStack(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "keeper")
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", bin, module+"/"+production)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	info, err := buildinfo.ReadFile(bin)
	require.NoError(t, err)
	assert.Equal(t, module+"/"+production, info.Path)
	require.NotEmpty(t, info.Deps)
	for _, d := range info.Deps {
		assert.False(t, matchAny(devStack, d.Path), "the production binary records module %s %s", d.Path, d.Version)
	}
	st, err := os.Stat(bin)
	require.NoError(t, err)
	assert.LessOrEqual(t, st.Size(), int64(maxProductionSize), "the production binary weighs %.1f MB stripped", float64(st.Size())/1e6)
}
