package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Defaults use cmp.Or (docs/architecture.md): a block that only sets x to
// a default when x is zero, `if x == 0 { x = D }`, reads as
// `x = cmp.Or(x, D)`. A block whose default is a call stays, as cmp.Or would
// make the call every time; so does one on `<= 0` whose value may be
// negative from a caller keeper does not validate (listed here, with why).
var defaultBlocksAllowed = []string{
	// A public API: a negative timeout from another program takes the
	// default, where cmp.Or would give an expired deadline.
	"receipt/verify/verify.go: timeout",
	// Not a default: every count of 0 or less means no limit, -1.
	"internal/dev/devnet/faults.go: left",
}

func TestDefaultsAreFilledWithCmpOr(t *testing.T) {
	root := moduleRoot(t)
	var found []string
	for _, rel := range productionFiles(t, root) {
		fset := token.NewFileSet()
		file, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, 0)
		require.NoError(t, err, rel)
		for _, d := range defaultBlocks(fset, file) {
			if !slices.Contains(defaultBlocksAllowed, rel+": "+d.name) {
				found = append(found, rel+":"+strconv.Itoa(d.line)+": "+d.name)
			}
		}
	}
	assert.Empty(t, found, "fill these defaults with cmp.Or")
}

func TestTheDefaultsCheckFindsAZeroTestThatSetsADefault(t *testing.T) {
	src := `package x
func f(o Options, n int, s string) {
	if o.Timeout <= 0 {
		o.Timeout = 30 * time.Second
	}
	if s == "" {
		s = "text"
	}
	if n == 0 {
		n = rand.Int()
	}
	if n == 0 {
		n = 1
	} else {
		n++
	}
}`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "x.go", src, 0)
	require.NoError(t, err)
	var names []string
	for _, d := range defaultBlocks(fset, file) {
		names = append(names, d.name)
	}
	assert.Equal(t, []string{"o.Timeout", "s"}, names)
}

type defaultBlock struct {
	name string
	line int
}

// defaultBlocks finds `if x == 0 { x = D }`, `if x <= 0 { x = D }` and
// `if x == "" { x = D }` with no else, where D makes no call.
func defaultBlocks(fset *token.FileSet, file *ast.File) []defaultBlock {
	var out []defaultBlock
	ast.Inspect(file, func(n ast.Node) bool {
		ifs, ok := n.(*ast.IfStmt)
		if !ok || ifs.Else != nil || ifs.Init != nil || len(ifs.Body.List) != 1 {
			return true
		}
		cond, ok := ifs.Cond.(*ast.BinaryExpr)
		if !ok || (cond.Op != token.EQL && cond.Op != token.LEQ) {
			return true
		}
		lit, ok := cond.Y.(*ast.BasicLit)
		if !ok || (lit.Value != "0" && lit.Value != `""`) {
			return true
		}
		as, ok := ifs.Body.List[0].(*ast.AssignStmt)
		if !ok || as.Tok != token.ASSIGN || len(as.Lhs) != 1 || len(as.Rhs) != 1 {
			return true
		}
		name := exprString(cond.X)
		if name == "" || exprString(as.Lhs[0]) != name || makesCall(as.Rhs[0]) {
			return true
		}
		out = append(out, defaultBlock{name: name, line: fset.Position(ifs.Pos()).Line})
		return true
	})
	return out
}

// exprString spells an identifier or a chain of selectors, "" otherwise.
func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		if base := exprString(x.X); base != "" {
			return base + "." + x.Sel.Name
		}
	}
	return ""
}

// makesCall reports whether e calls a function (a conversion of a constant,
// like time.Duration(5), counts as a call: the check stays on the safe side).
func makesCall(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		if _, ok := n.(*ast.CallExpr); ok {
			found = true
		}
		return !found
	})
	return found
}
