package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A test of the quick suite asserts on a duration only on a clock it
// controls (docs/tests.md): inside a testing/synctest bubble, where time is
// the bubble's, or on an injected clock. An assertion whose arguments take
// time.Since or time.Until, directly or through a variable set from them,
// outside a bubble, measures the machine, and flakes when it is loaded.
func TestTheQuickSuiteAssertsOnDurationsOnlyOnAClockItControls(t *testing.T) {
	root := moduleRoot(t)
	var found []string
	files := quickTestFiles(t, root)
	require.Greater(t, len(files), 100, "the quick suite's test files were found")
	for _, rel := range files {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, 0)
		require.NoError(t, err, rel)
		for _, at := range wallClockAsserts(fset, file) {
			found = append(found, rel+":"+at)
		}
	}
	assert.Empty(t, found, "assertions on the wall clock's durations: run the test in synctest.Test, or give the code a clock")
}

func TestTheWallClockCheckFindsAnAssertionOutsideABubble(t *testing.T) {
	src := `package x
func TestA(t *testing.T) {
	start := time.Now()
	took := time.Since(start)
	assert.Less(t, took, time.Second)
	require.True(t, time.Until(deadline) > 0)
	synctest.Test(t, func(t *testing.T) {
		assert.Equal(t, time.Second, time.Since(start))
	})
	t.Logf("took %v", time.Since(start))
}`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "x_test.go", src, 0)
	require.NoError(t, err)
	assert.Equal(t, []string{"5", "6"}, wallClockAsserts(fset, file))
}

// wallClockAsserts returns the lines of assert and require calls, outside a
// synctest.Test bubble, whose arguments use time.Since or time.Until or a
// variable assigned from one of them.
func wallClockAsserts(fset *token.FileSet, file *ast.File) []string {
	var out []string
	for _, decl := range file.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		measured := map[string]bool{}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if as, ok := n.(*ast.AssignStmt); ok && len(as.Lhs) == len(as.Rhs) {
				for i, rhs := range as.Rhs {
					if id, ok := as.Lhs[i].(*ast.Ident); ok && usesWallClock(rhs, nil) {
						measured[id.Name] = true
					}
				}
			}
			return true
		})
		var walk func(n ast.Node, inBubble bool)
		walk = func(n ast.Node, inBubble bool) {
			ast.Inspect(n, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok {
					return true
				}
				switch pkg, _ := selector(call.Fun); {
				case pkg == "synctest":
					for _, a := range call.Args {
						walk(a, true)
					}
					return false
				case (pkg == "assert" || pkg == "require") && !inBubble:
					for _, a := range call.Args {
						if usesWallClock(a, measured) {
							out = append(out, strconv.Itoa(fset.Position(call.Pos()).Line))
							break
						}
					}
				}
				return true
			})
		}
		walk(fn.Body, false)
	}
	return out
}

// usesWallClock reports whether e calls time.Since or time.Until or names
// a variable in measured.
func usesWallClock(e ast.Node, measured map[string]bool) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.CallExpr:
			if pkg, name := selector(x.Fun); pkg == "time" && (name == "Since" || name == "Until") {
				found = true
			}
		case *ast.Ident:
			if measured[x.Name] {
				found = true
			}
		}
		return !found
	})
	return found
}

// selector splits pkg.Name.
func selector(e ast.Expr) (pkg, name string) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	return id.Name, sel.Sel.Name
}

// quickTestFiles lists the module's test files that go test ./... builds:
// those with no build constraint.
func quickTestFiles(t *testing.T, root string) []string {
	return moduleGoFiles(t, root, func(name string, src []byte) bool {
		return strings.HasSuffix(name, "_test.go") &&
			!strings.HasPrefix(string(src), "//go:build ") && !strings.Contains(string(src), "\n//go:build ")
	})
}
