package architecture

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// featureFiles maps each name a feature's file has been given to the one
// it must have in every layer (docs/architecture.md, "Feature × layer"):
// anchor.go, backfill.go, epoch.go, webhook.go, with their _test.go and
// _payloads.go.
var featureFiles = map[string]string{
	"evidence": "anchor", "anchors": "anchor", "anchoring": "anchor",
	"wallet": "backfill", "wallets": "backfill", "backfills": "backfill",
	"epochs":   "epoch",
	"webhooks": "webhook",
}

// canonical are the features' files.
var canonical = []string{"anchor.go", "backfill.go", "epoch.go", "webhook.go"}

// layers are the packages that hold a file per feature. A feature's routes,
// dispatcher, activities and worker registration are its own package's
// (featurePackages), with a file per role.
var layers = []string{"api", "client", "internal/cli", "internal/workflows", "internal/store", "internal/node", "internal/config", "internal/bench"}

// featurePackages are the features' own packages, and roleFiles the files
// each has for the same role: what it is (doc.go), its routes (http.go),
// its activities (activities.go), its worker registration (worker.go), its
// metrics (metrics.go) and its check for leaked goroutines (leak_test.go).
var (
	featurePackages = []string{"internal/anchor", "internal/backfill", "internal/epoch", "internal/webhook"}
	roleFiles       = []string{"doc.go", "http.go", "activities.go", "worker.go", "metrics.go", "leak_test.go"}
)

// misnamed lists the files of a layer named for a feature under another
// name than the feature's, with the name they should have.
func misnamed(layer string, files []string) []string {
	var out []string
	for _, f := range files {
		stem, ok := strings.CutSuffix(f, ".go")
		if !ok {
			continue
		}
		suffix := ""
		for _, s := range []string{"_test", "_payloads"} {
			if base, ok := strings.CutSuffix(stem, s); ok {
				stem, suffix = base, s
				break
			}
		}
		if want, ok := featureFiles[stem]; ok {
			out = append(out, layer+"/"+f+" → "+want+suffix+".go")
		}
	}
	return out
}

func TestEveryLayerNamesAFeaturesFileTheSame(t *testing.T) {
	dirs := map[string]string{}
	for _, p := range load(t) {
		dirs[p.Path] = p.Dir
	}
	var out []string
	for _, layer := range layers {
		dir, ok := dirs[layer]
		require.True(t, ok, "no package %s: a layer renamed must be renamed here too", layer)
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		var files []string
		for _, e := range entries {
			if !e.IsDir() {
				files = append(files, e.Name())
			}
		}
		// The layer holds a feature's file, so the names checked are real.
		assert.True(t, slices.ContainsFunc(files, func(f string) bool { return slices.Contains(canonical, f) }), "%s holds no feature's file", layer)
		out = append(out, misnamed(layer, files)...)
	}
	sort.Strings(out)
	assert.Empty(t, out, "a feature's file has another name than in the other layers (docs/architecture.md, Feature × layer)")
}

func TestTheFileNameCheckFindsAFeatureUnderAnotherName(t *testing.T) {
	assert.Equal(t, []string{
		"api/wallets.go → backfill.go",
		"api/epochs.go → epoch.go",
		"api/webhooks_test.go → webhook_test.go",
		"api/evidence.go → anchor.go",
		"api/webhooks_payloads.go → webhook_payloads.go",
	}, misnamed("api", []string{
		"anchor.go", "wallets.go", "epochs.go", "epoch_test.go", "webhooks_test.go", "evidence.go", "evidencescan.go",
		"webhooks_payloads.go", "deadletters.go", "doc.go", "webhooks.md",
	}))
}

func TestEveryFeaturePackageHasAFileForEachRole(t *testing.T) {
	dirs := map[string]string{}
	for _, p := range load(t) {
		dirs[p.Path] = p.Dir
	}
	var missing []string
	for _, f := range featurePackages {
		dir, ok := dirs[f]
		require.True(t, ok, "no package %s: a feature renamed must be renamed here too", f)
		for _, name := range roleFiles {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				missing = append(missing, f+"/"+name)
			}
		}
	}
	assert.Empty(t, missing, "a feature's package lacks the file of a role the others have (docs/architecture.md, Feature × layer)")
}
