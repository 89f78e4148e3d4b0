// Package docs_test keeps keeper's documentation navigable: every relative
// link in every Markdown file of the repository leads to a file that exists
// and, when it names an anchor, to a heading of that file; every repository
// path in a fenced code block (`go run ./cmd/keeper`, `docs/log.md`) exists.
package docs_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pages are the repository's Markdown files, relative to docs/: every one
// outside hidden folders (.git, .tools) and installed node_modules.
func pages(t *testing.T) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules"):
			return filepath.SkipDir
		case !d.IsDir() && strings.HasSuffix(p, ".md"):
			out = append(out, p)
		}
		return nil
	}))
	require.Contains(t, out, filepath.Join(root, "README.md"))
	require.Contains(t, out, filepath.Join(root, "docs", "log.md"))
	return out
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
)

// prose returns the lines of a Markdown file outside fenced code blocks.
func prose(text string) []string {
	out, _ := split(text)
	return out
}

// split returns the lines of a Markdown file outside fenced code blocks and
// those inside them.
func split(text string) (prose, code []string) {
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			code = append(code, line)
		} else {
			prose = append(prose, line)
		}
	}
	return prose, code
}

// anchors returns the ids GitHub gives a file's headings: lower case, only
// letters, digits, spaces, hyphens and underscores kept, spaces as hyphens, a
// repeated heading suffixed -1, -2, ….
func anchors(text string) map[string]bool {
	ids := map[string]bool{}
	seen := map[string]int{}
	for _, line := range prose(text) {
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(strings.TrimSpace(m[1])) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteRune('-')
			}
		}
		id := b.String()
		if n := seen[id]; n > 0 {
			ids[id+"-"+itoa(n)] = true
		} else {
			ids[id] = true
		}
		seen[id]++
	}
	return ids
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var d []byte
	for ; n > 0; n /= 10 {
		d = append([]byte{byte('0' + n%10)}, d...)
	}
	return string(d)
}

type link struct{ page, target string }

// links returns the relative links of a page, outside code.
func links(t *testing.T, page string) []link {
	t.Helper()
	text, err := os.ReadFile(page)
	require.NoError(t, err)
	var out []link
	for _, line := range prose(string(text)) {
		line = inlineCodeRE.ReplaceAllString(line, "")
		for _, m := range linkRE.FindAllStringSubmatch(line, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			out = append(out, link{page, target})
		}
	}
	return out
}

func TestEveryRelativeLinkInEveryMarkdownFileLeadsToAFileAndHeadingThatExist(t *testing.T) {
	checked := 0
	for _, page := range pages(t) {
		for _, l := range links(t, page) {
			checked++
			file, anchor, _ := strings.Cut(l.target, "#")
			path := page
			if file != "" {
				path = filepath.Join(filepath.Dir(page), file)
			}
			info, err := os.Stat(path)
			if !assert.NoError(t, err, "%s links to %s, which does not exist", l.page, l.target) || anchor == "" {
				continue
			}
			if !assert.False(t, info.IsDir(), "%s links to %s: a directory has no headings", l.page, l.target) {
				continue
			}
			text, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.True(t, anchors(string(text))[anchor], "%s links to %s: %s has no heading #%s", l.page, l.target, path, anchor)
		}
	}
	assert.Greater(t, checked, 50, "the pages' relative links were found")
}

// codePaths returns the tokens of a page's fenced code blocks that are paths
// into the repository: those whose first segment, after an optional ./, is
// one of the repository's top-level entries (docs/log.md, ./cmd/keeper,
// .ci/run), and those starting ../ (from the page). Under a name the
// repository does not have is what a command creates (./log-mirror,
// ./.keeper), no path of the repository's. A package pattern's /... is
// dropped; a token with a placeholder (<page>, $DIR, …) or a glob is no
// path.
func codePaths(text string, top map[string]bool) []string {
	var out []string
	_, code := split(text)
	for _, line := range code {
		toks := strings.FieldsFunc(line, func(r rune) bool {
			return unicode.IsSpace(r) || strings.ContainsRune("\"'`()[]{},;=|", r)
		})
		for _, tok := range toks {
			tok = strings.TrimSuffix(tok, "/...")
			tok = strings.TrimRight(tok, ":.")
			if strings.Contains(tok, "://") || strings.ContainsAny(tok, "<>$*…@") {
				continue
			}
			first, _, nested := strings.Cut(strings.TrimPrefix(tok, "./"), "/")
			if strings.HasPrefix(tok, "../") || (top[first] && (nested || strings.HasPrefix(tok, "./"))) {
				out = append(out, tok)
			}
		}
	}
	return out
}

func TestEveryRepositoryPathInAMarkdownCodeBlockExists(t *testing.T) {
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	top := map[string]bool{}
	for _, e := range entries {
		top[e.Name()] = true
	}
	checked := 0
	for _, page := range pages(t) {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		for _, p := range codePaths(string(text), top) {
			checked++
			// A command runs from the repository's top; a path may also be
			// the page's own relative one.
			_, fromTop := os.Stat(filepath.Join(root, p))
			_, fromPage := os.Stat(filepath.Join(filepath.Dir(page), p))
			assert.True(t, fromTop == nil || fromPage == nil, "%s's code block names %s, which does not exist", page, p)
		}
	}
	assert.Greater(t, checked, 20, "the code blocks' paths were found")
}

func TestTheLinkCheckerFindsABrokenFileAndABrokenAnchor(t *testing.T) {
	ids := anchors("# Going to mainnet\n\n```sh\n# not a heading\n```\n## Cadence: what anchoring costs\n## Tiles\n## Tiles\n### Intake → in a `signed` checkpoint\n")
	for _, want := range []string{"going-to-mainnet", "cadence-what-anchoring-costs", "tiles", "tiles-1", "intake--in-a-signed-checkpoint"} {
		assert.True(t, ids[want], want)
	}
	assert.False(t, ids["not-a-heading"], "a comment in a code block is no heading")

	dir := t.TempDir()
	page := filepath.Join(dir, "page.md")
	require.NoError(t, os.WriteFile(page, []byte("see [a](missing.md) and `[b](code.md)` and [c](https://example.org)\n"), 0o644))
	assert.Equal(t, []link{{page, "missing.md"}}, links(t, page))

	top := map[string]bool{"docs": true, "cmd": true, ".ci": true, "receipt": true}
	block := "prose names docs/prose.md\n```sh\ngo run ./cmd/keeper --out=docs/out.md (see ../x.md, .ci/run:)\n" +
		"keeper log export ./log-mirror ./docs docs\n" +
		"go test ./receipt/... docs/<page>.md $DIR/cmd/x https://h/docs/y keeper.localhost/log v1/evidence\n```\n"
	assert.Equal(t, []string{"./cmd/keeper", "docs/out.md", "../x.md", ".ci/run", "./docs", "./receipt"}, codePaths(block, top))
}
