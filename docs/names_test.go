package docs_test

import (
	"bufio"
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The docs name the code in their code spans: package paths
// (`receipt/verify`, `github.com/keeperhq/keeper/client`), exported
// identifiers as pkg.Ident (`verify.Check`, `solana.Config.AnchorLookbackSlots`)
// and the payload prefixes anchors write on chain (`keeper:v3:`). This test
// holds every such name to the code, so a rename, a move or a new payload
// version cannot leave a page pointing at what no longer exists.

const module = "github.com/keeperhq/keeper"

// root is the repository's top, from docs/.
const root = ".."

// codeSpans returns the inline code spans of a page's prose.
func codeSpans(text string) []string {
	var out []string
	for _, line := range prose(text) {
		for _, m := range inlineCodeRE.FindAllString(line, -1) {
			out = append(out, strings.Trim(m, "`"))
		}
	}
	return out
}

// goPackage is one package as `go list` sees it.
type goPackage struct {
	path, name, dir string
	local           bool // keeper's own, not an outside module's
}

// listPackages returns keeper's packages and every package they or their
// tests link, keyed by package name, and the import paths of keeper's own
// packages, commands included.
func listPackages(t *testing.T) (map[string][]goPackage, map[string]bool) {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-test", "-f", "{{.ImportPath}}\t{{.Name}}\t{{.Dir}}\t{{with .Module}}{{.Path}}{{end}}", module+"/...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "go list: %s", stderr.String())
	byName := map[string][]goPackage{}
	local := map[string]bool{}
	seen := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		require.Len(t, f, 4, sc.Text())
		path, _, _ := strings.Cut(f[0], " ") // "p [p.test]" is p built for its tests
		if f[3] == module && !strings.HasSuffix(path, ".test") {
			local[path] = true
		}
		if seen[path] || f[1] == "main" || strings.HasSuffix(path, ".test") || strings.HasSuffix(f[1], "_test") {
			continue
		}
		seen[path] = true
		byName[f[1]] = append(byName[f[1]], goPackage{path: path, name: f[1], dir: f[2], local: f[3] == module})
	}
	require.NoError(t, sc.Err())
	require.NotEmpty(t, byName["verify"], "go list found keeper's packages")
	return byName, local
}

// exports are a package's exported names: its top-level declarations and,
// per type, its fields and methods.
type exports struct {
	top     map[string]bool
	members map[string]map[string]bool // type → its fields and methods
	any     map[string]bool            // every exported field or method of any type
	strings []string                   // its string literals
}

func parsePackage(t *testing.T, dir string) exports {
	t.Helper()
	e := exports{top: map[string]bool{}, members: map[string]map[string]bool{}, any: map[string]bool{}}
	member := func(typ, name string) {
		if !ast.IsExported(name) {
			return
		}
		if e.members[typ] == nil {
			e.members[typ] = map[string]bool{}
		}
		e.members[typ][name] = true
		e.any[name] = true
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					e.top[d.Name.Name] = true
				} else if len(d.Recv.List) == 1 {
					member(receiverType(d.Recv.List[0].Type), d.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						e.top[s.Name.Name] = true
						switch ty := s.Type.(type) {
						case *ast.StructType:
							for _, fl := range ty.Fields.List {
								for _, n := range fl.Names {
									member(s.Name.Name, n.Name)
								}
								if len(fl.Names) == 0 {
									member(s.Name.Name, receiverType(fl.Type))
								}
							}
						case *ast.InterfaceType:
							for _, m := range ty.Methods.List {
								for _, n := range m.Names {
									member(s.Name.Name, n.Name)
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							e.top[n.Name] = true
						}
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					e.strings = append(e.strings, s)
				}
			}
			return true
		})
	}
	return e
}

// receiverType is the name of a receiver's or an embedded field's type.
func receiverType(x ast.Expr) string {
	switch x := x.(type) {
	case *ast.StarExpr:
		return receiverType(x.X)
	case *ast.IndexExpr:
		return receiverType(x.X)
	case *ast.IndexListExpr:
		return receiverType(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return ""
}

// has reports whether the package exports name and, if given, whether
// member is a field or method of it (of its type, for a variable).
func (e exports) has(name, member string) bool {
	if !e.top[name] {
		return false
	}
	if member == "" {
		return true
	}
	if ms, ok := e.members[name]; ok {
		return ms[member]
	}
	return e.any[member] // a variable or a type with embedded fields: any type's member
}

var (
	// identRE is a span that starts with pkg.Ident, optionally .Member
	// after it, as in `verify.Check`, `*client.Error`,
	// `retry.Webhook.Within(n)`.
	identRE = regexp.MustCompile(`^\*?([a-z][a-z0-9]*)\.([A-Z][A-Za-z0-9_]*)(?:\.([A-Z][A-Za-z0-9_]*))?(?:$|[(\[ ])`)
	// pathRE is a token that is a slash-separated path, such as
	// `internal/webhooksign/`, `./cmd/keeper` or `receipt/verify/...`.
	pathRE = regexp.MustCompile(`^(?:\./)?([a-z][a-z0-9_.-]*(?:/[A-Za-z0-9_.-]+)+)/?$`)
	// payloadRE is an anchor payload's prefix: "keeper:v3:", "keeper:v1".
	payloadRE = regexp.MustCompile(`keeper:v[0-9]+:?`)
)

// goRoots are the repository's top-level folders that hold Go packages: a
// path starting with one of them names keeper's code.
func goRoots(t *testing.T) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	roots := map[string]bool{}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		found := false
		require.NoError(t, filepath.WalkDir(filepath.Join(root, e.Name()), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".go") {
				found = true
				return filepath.SkipAll
			}
			return err
		}))
		if found {
			roots[e.Name()] = true
		}
	}
	return roots
}

// checker holds what the code has, to check the pages' names against.
type checker struct {
	t        *testing.T
	packages map[string][]goPackage
	local    map[string]bool // keeper's import paths
	parsed   map[string]exports
	roots    map[string]bool
	payloads []string // string literals of keeper's code that start an anchor payload
}

func newChecker(t *testing.T) *checker {
	c := &checker{t: t, parsed: map[string]exports{}, roots: goRoots(t)}
	c.packages, c.local = listPackages(t)
	for _, pkgs := range c.packages {
		for _, p := range pkgs {
			if !p.local {
				continue
			}
			for _, s := range c.exports(p).strings {
				if payloadRE.MatchString(s) && strings.HasPrefix(s, "keeper:v") {
					c.payloads = append(c.payloads, s)
				}
			}
		}
	}
	require.NotEmpty(t, c.payloads, "keeper's code writes anchor payloads")
	return c
}

func (c *checker) exports(p goPackage) exports {
	e, ok := c.parsed[p.dir]
	if !ok {
		e = parsePackage(c.t, p.dir)
		c.parsed[p.dir] = e
	}
	return e
}

// ident checks `pkg.Ident[.Member]`: keeper's package of that name, or a
// package of that name its code links, must export it.
func (c *checker) ident(span string) string {
	m := identRE.FindStringSubmatch(span)
	if m == nil {
		return ""
	}
	name, ident, member := m[1], m[2], m[3]
	pkgs := c.packages[name]
	if len(pkgs) == 0 {
		return "`" + span + "`: no package named " + name + " in keeper or in what it links"
	}
	for _, p := range pkgs {
		if c.exports(p).has(ident, member) {
			return ""
		}
	}
	var paths []string
	for _, p := range pkgs {
		paths = append(paths, p.path)
	}
	what := name + "." + ident
	if member != "" {
		what += "." + member
	}
	return "`" + span + "`: " + strings.Join(paths, ", ") + " has no " + what
}

// path checks each token of a span that is a path into keeper's code, as a
// module import path or relative to the repository: it must exist.
func (c *checker) path(span string) []string {
	var out []string
	for _, tok := range strings.Fields(span) {
		tok = strings.TrimRight(tok, ",;:)")
		tok = strings.TrimSuffix(tok, "/...")
		local, isModule := strings.CutPrefix(tok, module)
		if isModule {
			local = strings.TrimPrefix(local, "/")
			if local == "" {
				continue
			}
			if !c.local[module+"/"+local] {
				out = append(out, "`"+span+"`: "+tok+" is no package of keeper's")
			}
			continue
		}
		m := pathRE.FindStringSubmatch(tok)
		if m == nil || !c.roots[strings.SplitN(m[1], "/", 2)[0]] {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, m[1])); err != nil {
			out = append(out, "`"+span+"`: "+m[1]+" does not exist")
		}
	}
	return out
}

// payload checks every anchor payload prefix a page names anywhere: some
// string of keeper's code must start with it.
func (c *checker) payload(text string) []string {
	var out []string
	for _, p := range payloadRE.FindAllString(text, -1) {
		found := false
		for _, s := range c.payloads {
			if strings.HasPrefix(s, p) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, p+": no anchor payload of keeper's code starts so")
		}
	}
	return out
}

func (c *checker) page(text string) []string {
	var out []string
	for _, span := range codeSpans(text) {
		if msg := c.ident(span); msg != "" {
			out = append(out, msg)
		}
		out = append(out, c.path(span)...)
	}
	return append(out, c.payload(text)...)
}

func TestEveryPackageIdentifierAndPayloadTheDocsNameExistsInTheCode(t *testing.T) {
	c := newChecker(t)
	spans := 0
	for _, page := range pages(t) {
		text, err := os.ReadFile(page)
		require.NoError(t, err)
		spans += len(codeSpans(string(text)))
		for _, msg := range c.page(string(text)) {
			t.Errorf("%s names what the code does not have: %s", page, msg)
		}
	}
	assert.Greater(t, spans, 1000, "the pages' code spans were found")
}

func TestTheNameCheckerFindsAMissingPackageIdentifierMemberAndPayload(t *testing.T) {
	c := newChecker(t)
	page := "Call `verify.Check` or `receipt/verify`, see `verify.Options.Trust` and `*client.Error`, " +
		"anchor `keeper:v3:` (`go test ./receipt/verify/...`, `github.com/keeperhq/keeper/client`).\n" +
		"```\n`verify.Gone` in a code block is not a span\n```\n"
	assert.Empty(t, c.page(page))

	stale := "Call `webhooksign.Verify(secret)`, `webhooks.Signature`, `verify.Options.Nope`, " +
		"`internal/nothere/`, `go test ./receipt/gone`, `github.com/keeperhq/keeper/internal/nothere`; " +
		"it writes `keeper:v9:` ‖ root.\n"
	assert.Equal(t, []string{
		"`webhooksign.Verify(secret)`: github.com/keeperhq/keeper/internal/webhooksign has no webhooksign.Verify",
		"`webhooks.Signature`: no package named webhooks in keeper or in what it links",
		"`verify.Options.Nope`: github.com/keeperhq/keeper/receipt/verify has no verify.Options.Nope",
		"`internal/nothere/`: internal/nothere does not exist",
		"`go test ./receipt/gone`: receipt/gone does not exist",
		"`github.com/keeperhq/keeper/internal/nothere`: github.com/keeperhq/keeper/internal/nothere is no package of keeper's",
		"keeper:v9:: no anchor payload of keeper's code starts so",
	}, c.page(stale))
}
