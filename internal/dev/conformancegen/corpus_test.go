package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/conformance"
)

// generated writes the corpus Generate makes to a temporary directory and
// loads it.
func generated(t *testing.T) (string, []conformance.Vector) {
	t.Helper()
	files, err := Generate()
	require.NoError(t, err)
	dir := t.TempDir()
	require.NoError(t, write(dir, files))
	vs, err := conformance.Load(dir)
	require.NoError(t, err)
	return dir, vs
}

func TestTheCorpusIsCurrent(t *testing.T) {
	dir, _ := generated(t)
	const fix = "conformance/vectors is not what the generator makes: run `go run ./internal/dev/conformancegen` from the repository's root and commit the result"
	want, err := filepath.Glob(filepath.Join(dir, "*.json"))
	require.NoError(t, err)
	got, err := filepath.Glob(filepath.Join(conformance.Dir(), "*.json"))
	require.NoError(t, err)
	base := func(paths []string) []string {
		out := make([]string, len(paths))
		for i, p := range paths {
			out[i] = filepath.Base(p)
		}
		return out
	}
	require.Equal(t, base(want), base(got), fix)
	for _, p := range want {
		a, err := os.ReadFile(p)
		require.NoError(t, err)
		b, err := os.ReadFile(filepath.Join(conformance.Dir(), filepath.Base(p)))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(a, b), "%s differs. %s", filepath.Base(p), fix)
	}
}

func TestGenerateMakesTheSameBytesEveryRun(t *testing.T) {
	a, err := Generate()
	require.NoError(t, err)
	b, err := Generate()
	require.NoError(t, err)
	assert.Equal(t, a, b)
}

func TestEveryVectorButTheGenuineChangesAGenuineControl(t *testing.T) {
	_, vs := generated(t)
	byName := map[string]conformance.Vector{}
	for _, v := range vs {
		byName[v.Name] = v
	}
	for _, v := range vs {
		if v.Expect.Verifier.Verdict == conformance.Accept {
			assert.Empty(t, v.Expect.Verifier.Check, v.Name)
		} else {
			assert.Equal(t, conformance.Reject, v.Expect.Verifier.Verdict, v.Name)
			assert.Empty(t, v.Expect.ExistedBy, "%s: a refused receipt states no bound", v.Name)
		}
		if v.Class == classGenuine {
			assert.Empty(t, v.Control, v.Name)
			continue
		}
		c, ok := byName[v.Control]
		if assert.True(t, ok, "%s: control %q is not a vector", v.Name, v.Control) {
			assert.Equal(t, classGenuine, c.Class, "%s: control %s", v.Name, c.Name)
			assert.Equal(t, conformance.Accept, c.Expect.Verifier.Verdict, "%s: control %s", v.Name, c.Name)
		}
	}
}

// readmeTable reads the first column of the table under heading in
// conformance/README.md.
func readmeTable(t *testing.T, heading string) []string {
	t.Helper()
	readme, err := os.ReadFile(filepath.Join(conformance.Dir(), "..", "README.md"))
	require.NoError(t, err)
	_, section, ok := bytes.Cut(readme, []byte("\n## "+heading+"\n"))
	require.True(t, ok, "conformance/README.md has no section %q", heading)
	section, _, _ = bytes.Cut(section, []byte("\n## "))
	var out []string
	for _, m := range regexp.MustCompile("(?m)^(?:\\| `|[0-9]+\\. `)([a-z0-9-]+)`").FindAllSubmatch(section, -1) {
		out = append(out, string(m[1]))
	}
	return out
}

func TestEveryCheckAndClassOfTheReadmeHasAVector(t *testing.T) {
	_, vs := generated(t)
	var checks, classes []string
	for _, v := range vs {
		checks = append(checks, v.Expect.Verifier.Check)
		classes = append(classes, v.Class)
	}
	readmeChecks := readmeTable(t, "Checks, in order")
	require.Len(t, readmeChecks, 20)
	for _, c := range readmeChecks {
		assert.Contains(t, checks, c, "no vector fails check %s", c)
	}
	readmeClasses := readmeTable(t, "Classes")
	for _, c := range readmeClasses {
		assert.Contains(t, classes, c, "no vector of class %s", c)
	}
	for _, c := range slices.Compact(slices.Sorted(slices.Values(classes))) {
		if c != classGenuine {
			assert.Contains(t, readmeClasses, c, "class %s is not in conformance/README.md's Classes table", c)
		}
	}
	for _, v := range vs {
		if v.Expect.Verifier.Check != "" {
			assert.Contains(t, readmeChecks, v.Expect.Verifier.Check, v.Name)
		}
	}
}

func TestTheCorpusIsLargeAndEveryVectorDescribed(t *testing.T) {
	_, vs := generated(t)
	assert.GreaterOrEqual(t, len(vs), 60)
	for _, v := range vs {
		assert.NotEmpty(t, v.Description, v.Name)
		assert.Contains(t, []string{conformance.FormatJSON, conformance.FormatTLogProof}, v.ReceiptFormat, v.Name)
		for chain, names := range v.Endpoints {
			assert.Contains(t, []string{"etherlink", "solana"}, chain, v.Name)
			for _, n := range names {
				assert.NotEmpty(t, v.Answers[n], "%s: endpoint %s answers nothing", v.Name, n)
			}
		}
		assert.Equal(t, len(v.Answers), countEndpoints(v), "%s: answers for an endpoint no chain names", v.Name)
	}
}

func countEndpoints(v conformance.Vector) int {
	var names []string
	for _, ns := range v.Endpoints {
		names = append(names, ns...)
	}
	slices.Sort(names)
	return len(slices.Compact(names))
}
