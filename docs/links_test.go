// Package docs_test keeps keeper's documentation navigable: every relative
// link in the README and in docs/ leads to a file that exists and, when it
// names an anchor, to a heading of that file.
package docs_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pages are the Markdown files whose links the test follows, relative to docs/.
func pages(t *testing.T) []string {
	t.Helper()
	docs, err := filepath.Glob("*.md")
	require.NoError(t, err)
	require.NotEmpty(t, docs)
	return append([]string{"../README.md"}, docs...)
}

var (
	linkRE       = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	inlineCodeRE = regexp.MustCompile("`[^`]*`")
	headingRE    = regexp.MustCompile(`^#{1,6}\s+(.*)$`)
)

// prose returns the lines of a Markdown file outside fenced code blocks.
func prose(text string) []string {
	var out []string
	fenced := false
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			out = append(out, line)
		}
	}
	return out
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

func TestEveryRelativeLinkInTheDocsLeadsToAFileAndHeadingThatExist(t *testing.T) {
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
}
