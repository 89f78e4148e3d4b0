package architecture

import (
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// racePackages is the list of packages .ci/run tests under the race
// detector, one pattern a line.
const racePackages = ".ci/race-packages"

// leakChecked lists the packages whose tests check for leaked goroutines
// (a TestMain calling internal/leaktest), relative to the module.
func leakChecked(t *testing.T, root string) []string {
	seen := map[string]bool{}
	for _, rel := range moduleGoFiles(t, root, func(name string, src []byte) bool {
		return strings.HasSuffix(name, "_test.go") && strings.Contains(string(src), `"`+module+`/internal/leaktest"`)
	}) {
		seen[path.Dir(rel)] = true
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// TestEveryPackageThatChecksForLeaksRunsUnderTheRaceDetector holds the two
// checks of concurrency together: a package that owns goroutines checks
// it leaves none (leaktest) and .ci/run runs it with -race; each package on
// the race list checks for leaks, and each that checks is on the list.
func TestEveryPackageThatChecksForLeaksRunsUnderTheRaceDetector(t *testing.T) {
	root := moduleRoot(t)
	src, err := os.ReadFile(filepath.Join(root, racePackages))
	require.NoError(t, err)
	var listed []string
	for _, line := range strings.Fields(string(src)) {
		p := strings.TrimSuffix(strings.TrimPrefix(line, "./"), "/...")
		listed = append(listed, p)
	}
	sort.Strings(listed)
	checked := leakChecked(t, root)
	require.NotEmpty(t, checked, "no package checks for leaks: is the check still reading the files?")
	for _, p := range checked {
		assert.True(t, matchAny(listed, p) || matchAny(withSubtrees(listed), p), "%s checks for leaks but is not in %s", p, racePackages)
	}
	for _, p := range listed {
		assert.Contains(t, checked, p, "%s is in %s but its tests do not check for leaks (a TestMain calling leaktest.Main)", p, racePackages)
	}
	ci, err := os.ReadFile(filepath.Join(root, ".ci/run"))
	require.NoError(t, err)
	assert.Contains(t, string(ci), "go test -race -count=1 $(cat "+racePackages+")", ".ci/run runs the list under the race detector")
}

// withSubtrees turns each listed path into a pattern of it and below.
func withSubtrees(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = p + "/..."
	}
	return out
}
