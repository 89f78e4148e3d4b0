package architecture

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
)

// features are keeper's features, a package each: its routes, its narrow
// store and Temporal interfaces, its dispatcher, activities and worker
// registration (docs/architecture.md). The node composes them; they meet
// nowhere else but in the store and the workflows.
var features = []string{"internal/anchor", "internal/backfill", "internal/epoch", "internal/webhook", "internal/witness"}

// featureRules forbid each feature to link another, at any depth, and the
// packages below the features (the store, the workflows, the log, the
// shared route and worker helpers) to link any.
func featureRules() []rule {
	var out []rule
	for _, f := range features {
		others := slices.DeleteFunc(slices.Clone(features), func(o string) bool { return o == f })
		var to []string
		for _, o := range others {
			to = append(to, o, o+"/...")
		}
		out = append(out, rule{
			name:       "a feature links no other feature: " + f,
			from:       []string{f, f + "/..."},
			to:         to,
			transitive: true,
		})
	}
	var all []string
	for _, f := range features {
		all = append(all, f, f+"/...")
	}
	out = append(out, rule{
		name: "what the features share links no feature: the store, the workflows, the log, the route, worker and dispatch helpers",
		from: []string{"internal/store/...", "internal/workflows/...", "internal/logsvc/...", "internal/httpapi/...", "internal/worker/...",
			"internal/sweep/...", "internal/receipts/...", "internal/chains/...", "internal/backfill/scan", "internal/backfill/evmscan", "internal/backfill/solscan"},
		to:         all,
		allow:      []string{"internal/backfill/scan", "internal/backfill/evmscan", "internal/backfill/solscan"},
		transitive: true,
	})
	return out
}

func TestNoFeatureImportsAnother(t *testing.T) {
	pkgs := load(t)
	paths := pathsOf(pkgs)
	for _, f := range features {
		assert.Contains(t, paths, f, "the feature package is gone: update features")
	}
	assert.Empty(t, violations(pkgs, featureRules()), "a feature reaches another (docs/architecture.md)")
}

func TestTheFeatureRulesCatchAFeatureImportingAnother(t *testing.T) {
	pkgs := []pkg{
		{Path: "internal/epoch", Deps: []string{"internal/store", "internal/anchor"}},
		{Path: "internal/anchor", Deps: []string{"internal/store", "internal/workflows"}},
		{Path: "internal/workflows", Deps: []string{"internal/webhook"}},
		{Path: "internal/store", Deps: []string{"internal/backfill/scan"}},
	}
	got := violations(pkgs, featureRules())
	assert.Len(t, got, 2, "%v", got)
	assert.Contains(t, got[0]+got[1], "internal/epoch")
	assert.Contains(t, got[0]+got[1], "internal/workflows")
}
