package verifypage_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/verifypage"
)

// vendored are the npm files the page inlines, pinned by version and
// SHA-256 (docs/receipts.md, "The page's vendored code"). .ci/run installs
// these exact versions into .tools/npm so the test compares the page's
// bytes with the packages' own.
var vendored = []struct{ pkg, version, file, sha256 string }{
	{"@noble/hashes", "1.8.0", "LICENSE", "4f221aee6e072336700c408c68ab3b96a3fc09f6aebe6f48f1bd99e5ef13faec"},
	{"@noble/hashes", "1.8.0", "crypto.js", "c5ee6d6553e69ba96f9a2a7f70e677bf69a6e2d52849a892e67b2e547dc96b28"},
	{"@noble/hashes", "1.8.0", "utils.js", "7edf19720c345e1cb76e8d3a9306f3344457d4e03576bbb0b3e1ffd0a42d0d30"},
	{"@noble/hashes", "1.8.0", "_u64.js", "9b109bb57c0d8852bda12136f0f588ffea2a1a3c0f4241bdbb3727cd449976ae"},
	{"@noble/hashes", "1.8.0", "sha3.js", "313da3570150e80b02c3631508ba99099438d2daff641b9cadb2198e0f1d18ec"},
	{"@noble/secp256k1", "1.7.2", "LICENSE", "394c2e6e5552e5dba202bee6390b9d6aa2754d657f5b9869e83b3d265a315501"},
	{"@noble/secp256k1", "1.7.2", "lib/index.js", "fae671ed4d413639a8ef6b2795791419f9845f9984663a2d2a3b98f42c9c877f"},
}

var vendoredBlock = regexp.MustCompile(`(?s)// vendored begin (\S+)\n(.*?)\n\}\); // vendored end (\S+)\n`)
var licenseBlock = regexp.MustCompile(`(?s)/\* (\S+), its LICENSE file: vendored license begin\n(.*?)\nvendored license end (\S+) \*/\n`)

// inlined are the page's vendored files by "<package>@<version>/<file>".
func inlined(t *testing.T, html string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, m := range vendoredBlock.FindAllStringSubmatch(html, -1) {
		require.Equal(t, m[1], m[3], "a vendored block ends with its own name")
		out[m[1]] = m[2]
	}
	for _, m := range licenseBlock.FindAllStringSubmatch(html, -1) {
		require.Equal(t, m[1], m[3])
		out[m[1]+"/LICENSE"] = m[2]
	}
	return out
}

// ownCode is the page less its vendored files.
func ownCode(html string) string {
	return licenseBlock.ReplaceAllString(vendoredBlock.ReplaceAllString(html, ""), "")
}

func TestThePageInlinesExactlyThePinnedPackagesFiles(t *testing.T) {
	files := inlined(t, string(verifypage.Page()))
	require.Len(t, files, len(vendored), "every vendored file is pinned, and every pin is inlined")
	modules := os.Getenv("KEEPER_NPM_MODULES") // where the pinned packages are installed
	if modules == "" {
		modules = filepath.Join("..", "..", ".tools", "npm", "node_modules")
	}
	for _, v := range vendored {
		name := v.pkg + "@" + v.version + "/" + v.file
		got, ok := files[name]
		require.True(t, ok, "%s is inlined", name)
		sum := sha256.Sum256([]byte(got))
		assert.Equal(t, v.sha256, hex.EncodeToString(sum[:]), "%s is the pinned bytes", name)
		assert.NotContains(t, got, "fetch(", name)
		assert.NotContains(t, got, "XMLHttpRequest", name)
		assert.NotContains(t, got, "import(", name)
		assert.NotContains(t, strings.ToLower(got), "</script", name)

		dir := filepath.Join(modules, filepath.FromSlash(v.pkg))
		manifest, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if os.IsNotExist(err) && os.Getenv("CI") != "true" {
			t.Logf("%s is not installed in %s (.ci/run installs it): compared with the pinned SHA-256 only", v.pkg, modules)
			continue
		}
		require.NoError(t, err, "the pinned package %s is installed (.ci/run)", v.pkg)
		var pkg struct{ Name, Version string }
		require.NoError(t, json.Unmarshal(manifest, &pkg))
		require.Equal(t, v.pkg+"@"+v.version, pkg.Name+"@"+pkg.Version, "the installed package is the pinned version")
		want, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(v.file)))
		require.NoError(t, err)
		assert.Equal(t, string(want), got, "%s is byte for byte the package's", name)
	}
}
