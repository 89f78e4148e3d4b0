package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A function fits on a screen (docs/architecture.md): no function or method
// of the module's production code may be longer than maxFuncLines or more
// complex than maxComplexity.
const (
	maxFuncLines  = 100
	maxComplexity = 30
)

// tooBigAllowed are functions known to break the limits, named as
// funcName prints them. The list only shrinks.
var tooBigAllowed = []string{}

// complexity is a function's cyclomatic complexity: 1, plus 1 for every
// if, for and range statement, every case of a switch or type switch and
// every communication clause of a select but their default, and every &&
// and || operator. Function literals count towards the function that
// holds them, as their branches are read with it.
func complexity(fn ast.Node) int {
	n := 1
	ast.Inspect(fn, func(node ast.Node) bool {
		switch x := node.(type) {
		case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
			n++
		case *ast.CaseClause:
			if x.List != nil { // nil is default
				n++
			}
		case *ast.CommClause:
			if x.Comm != nil { // nil is default
				n++
			}
		case *ast.BinaryExpr:
			if x.Op == token.LAND || x.Op == token.LOR {
				n++
			}
		}
		return true
	})
	return n
}

// funcName is a function's name as the test reports it, with its
// receiver's type for a method: "Config.Validate", "WalletSync".
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	for {
		switch x := t.(type) {
		case *ast.StarExpr:
			t = x.X
			continue
		case *ast.IndexExpr: // a generic type's receiver: T[K]
			t = x.X
			continue
		case *ast.IndexListExpr:
			t = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fn.Name.Name
		}
		return fn.Name.Name
	}
}

// tooBig lists the functions of one parsed file that break the limits, one
// line each, prefixed with the file's module-relative path.
func tooBig(fset *token.FileSet, rel string, file *ast.File) []string {
	var out []string
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
		cc := complexity(fn)
		if lines > maxFuncLines || cc > maxComplexity {
			out = append(out, fmt.Sprintf("%s: %s (%d lines, complexity %d)", rel, funcName(fn), lines, cc))
		}
	}
	return out
}

// productionFiles lists the module's Go files that are neither tests nor
// generated, whatever their build tags, as paths relative to root.
func productionFiles(t *testing.T, root string) []string {
	return moduleGoFiles(t, root, func(name string, _ []byte) bool {
		return !strings.HasSuffix(name, "_test.go")
	})
}

// moduleGoFiles lists the module's .go files that keep accepts (given the
// file's name and source), as paths relative to root. It skips testdata,
// hidden and underscore directories and nested modules, as the go command
// does.
func moduleGoFiles(t *testing.T, root string, keep func(name string, src []byte) bool) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path == root {
				return nil
			}
			if name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "node_modules" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !keep(name, src) {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	require.NoError(t, err)
	return files
}

// moduleRoot is the directory of the module's go.mod, one up from this
// package's.
func moduleRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(root, "go.mod"))
	require.NoError(t, err, "the module's root is not architecture/..")
	return root
}

func TestEveryProductionFunctionFitsOnAScreen(t *testing.T) {
	root := moduleRoot(t)
	files := productionFiles(t, root)
	// The walk finds the module's code: an empty or partial list fails here.
	for _, want := range []string{"internal/workflows/backfill.go", "internal/epoch/http.go", "cmd/keeperd/main.go"} {
		require.Contains(t, files, want)
	}
	fset := token.NewFileSet()
	var found []string
	for _, rel := range files {
		file, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.ParseComments)
		require.NoError(t, err)
		if ast.IsGenerated(file) {
			continue
		}
		found = append(found, tooBig(fset, rel, file)...)
	}
	sort.Strings(found)
	var broken, allowed []string
	for _, f := range found {
		name, _, _ := strings.Cut(f, " (")
		if slices.Contains(tooBigAllowed, name) {
			allowed = append(allowed, name)
			continue
		}
		broken = append(broken, f)
	}
	assert.Empty(t, broken, "functions longer than %d lines or more complex than %d: split them into named helpers", maxFuncLines, maxComplexity)
	// An allowed function that has since been fixed leaves the list.
	for _, name := range tooBigAllowed {
		assert.Contains(t, allowed, name, "%s fits now: remove it from tooBigAllowed", name)
	}
}

func TestTheSizeCheckMeasuresLinesAndBranches(t *testing.T) {
	src := `package p

func small(a, b bool) int {
	if a && b || !a {
		return 1
	}
	for i := range 3 {
		_ = i
	}
	for {
		break
	}
	switch {
	case a:
	case b:
	default:
	}
	var c chan int
	select {
	case <-c:
	default:
	}
	var x any
	switch x.(type) {
	case int, string:
	}
	f := func() {
		if b {
		}
	}
	f()
	return 0
}

type T[K any] struct{}

func (*T[K]) long() {
` + strings.Repeat("\t_ = 0\n", 99) + `}
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	require.NoError(t, err)
	small := file.Decls[0].(*ast.FuncDecl)
	// 1 + if + && + || + range + for + 2 switch cases + 1 comm clause + 1
	// type-switch case + the literal's if.
	assert.Equal(t, 11, complexity(small))
	assert.Equal(t, []string{"p.go: T.long (101 lines, complexity 1)"}, tooBig(fset, "p.go", file))
}
