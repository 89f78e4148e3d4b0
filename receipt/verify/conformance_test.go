package verify_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/conformance"
	"github.com/keeperhq/keeper/receipt/verify"
)

// The corpus (conformance/README.md), run against this package: every
// vector's verdict, failing check and time bound.
func TestTheGoPackageRunsTheWholeCorpus(t *testing.T) {
	conformance.Each(t, func(t *testing.T, v conformance.Vector) {
		rep := verify.Verify(context.Background(), verify.Input{
			Receipt: []byte(v.Receipt), Trust: []byte(v.Trust), TrustUpdate: []byte(v.TrustUpdate), FileSHA256: v.FileSHA256(),
		}, verify.Options{Endpoints: conformance.Serve(t, v), Clocks: v.Clocks})
		detail := rep.Reason
		if rep.OK {
			detail = rep.Summary()
		}
		v.Assert(t, conformance.Verdict{OK: rep.OK, Check: rep.Check, ExistedBy: rep.ExistedBy, Detail: detail})
	})
}

// A check no vector fails is a check nobody can tell a verifier gets
// right; a class no vector belongs to is an attack nobody tests.
func TestEveryCheckAndEveryClassHasAVector(t *testing.T) {
	vectors, err := conformance.Load(conformance.Dir())
	require.NoError(t, err)
	checks, classes := map[string]int{}, map[string]int{}
	for _, v := range vectors {
		checks[v.Expect.Verifier.Check]++
		classes[v.Class]++
		if v.Class != "genuine" {
			assert.NotEmpty(t, v.Control, "%s: an invalid vector names the genuine one it changes", v.Name)
		}
	}
	for _, c := range verify.Checks {
		assert.Positive(t, checks[c], "no vector fails the %s check", c)
	}
	for c := range checks {
		assert.True(t, c == "" || slices.Contains(verify.Checks, c), "vectors name a check %q verify does not make", c)
	}
	readme, err := os.ReadFile(filepath.Join(filepath.Dir(conformance.Dir()), "README.md"))
	require.NoError(t, err)
	_, table, ok := strings.Cut(string(readme), "\n## Classes")
	require.True(t, ok, "conformance/README.md has a Classes table")
	table, _, _ = strings.Cut(table, "\n## ")
	listed := regexp.MustCompile("(?m)^\\| `([a-z0-9-]+)` \\|").FindAllStringSubmatch(table, -1)
	require.NotEmpty(t, listed)
	for _, m := range listed {
		assert.Positive(t, classes[m[1]], "class %s has no vector", m[1])
	}
	for c := range classes {
		found := c == "genuine"
		for _, m := range listed {
			found = found || m[1] == c
		}
		assert.True(t, found, "class %s is not in conformance/README.md's table", c)
	}
}
