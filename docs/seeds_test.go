package docs_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keeper was written from design documents the repository does not carry
// (numbered 000, 001, …). A reader cannot open them, so comments, strings
// (help, errors, test messages) and pages cite the docs/ page that states a
// rule and its reason instead.
var seedCitationRE = regexp.MustCompile(`(?i)\bseeds?\s*0\d\d\b|\bthe seeds\b|\b(?:the|a) seed's\b`)

// seedCitations returns the lines that hold a citation of a design
// document (a citation broken over two lines gives both), once each.
func seedCitations(text string) []string {
	var out []string
	for _, m := range seedCitationRE.FindAllStringIndex(text, -1) {
		start := strings.LastIndex(text[:m[0]], "\n") + 1
		end := len(text)
		if nl := strings.Index(text[m[1]:], "\n"); nl >= 0 {
			end = m[1] + nl
		}
		if lines := strings.TrimSpace(text[start:end]); len(out) == 0 || out[len(out)-1] != lines {
			out = append(out, lines)
		}
	}
	return out
}

// goTexts returns a Go file's comments and string literals.
func goTexts(t *testing.T, path string) []string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	require.NoError(t, err)
	var out []string
	for _, g := range f.Comments {
		out = append(out, g.Text())
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				s = lit.Value
			}
			out = append(out, s)
		}
		return true
	})
	return out
}

func TestNoCommentStringOrPageCitesADesignDocumentTheRepositoryDoesNotCarry(t *testing.T) {
	goFiles, mdFiles := 0, 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir // .git, .keeper, .ci's scratch
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		switch filepath.Ext(path) {
		case ".go":
			goFiles++
			for _, text := range goTexts(t, path) {
				for _, line := range seedCitations(text) {
					t.Errorf("%s cites a design document the repository does not carry (cite the docs/ page instead): %s", rel, line)
				}
			}
		case ".md":
			mdFiles++
			text, err := os.ReadFile(path)
			require.NoError(t, err)
			for _, line := range seedCitations(string(text)) {
				t.Errorf("%s cites a design document the repository does not carry (cite the docs/ page instead): %s", rel, line)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Greater(t, goFiles, 300, "the repository's Go files were read")
	assert.Greater(t, mdFiles, 15, "the repository's pages were read")
}

func TestTheSeedCheckerFindsCitationsButNotRandomSeedsOrKeySeeds(t *testing.T) {
	// The examples are split so that this file cites nothing itself.
	const seed, the = "seed", "the seed"
	for _, cited := range []string{
		"timeouts (5 s by default, " + seed + " 001)", "Seed" + " 000 asks that", "(" + seed + " 003: p95 < 100 ms)",
		"Of " + seed + " 001's other names", the + "'s health port", "as " + the + "s say", seed + "s 002",
		"p95 8.8 ms (" + seed + "\n003's < 100 ms p95 holds)", "an environment holding a " + seed + "'s setting",
	} {
		assert.NotEmpty(t, seedCitations(cited), cited)
	}
	for _, fine := range []string{
		"seed seeds the fault draws (0: random)", "KEEPER_CRASH_SEED to replay a run; the seed is logged",
		"public half no longer matches the seed", "ed25519.NewKeyFromSeed(raw[1:])", "secret seed then public key",
		"seed 42", "seeded 003 rows",
	} {
		assert.Empty(t, seedCitations(fine), fine)
	}

	dir := t.TempDir()
	src := filepath.Join(dir, "x.go")
	require.NoError(t, os.WriteFile(src, []byte("package x\n\n// Deadline ("+seed+" 001).\nconst help = \"as "+the+"s ask\"\n\nvar seed = 0\n"), 0o644))
	var found []string
	for _, text := range goTexts(t, src) {
		found = append(found, seedCitations(text)...)
	}
	assert.Equal(t, []string{"Deadline (" + seed + " 001).", "as " + the + "s ask"}, found)
}
