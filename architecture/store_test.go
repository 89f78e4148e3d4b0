package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wholeStore are the packages whose production code may name *store.Store
// as a type: the records layer and its test aids, and a node's wiring,
// which opens the store and hands it to every consumer as the interface
// the consumer declares (anchor.Batches, anchor.Outbox,
// webhook.Subscriptions, ...). Tools that open a store themselves (internal/cli,
// internal/bench, testsuite/record) keep it in a variable the compiler
// types and pass it on the same way.
var wholeStore = []string{"internal/store/...", "internal/node"}

// storeTypeUses lists where f names store.Store (imported from
// internal/store, under whatever name) as the type of a struct field, a
// parameter or result, a variable or a type declaration, at any depth of
// that type (*store.Store, []*store.Store, func(*store.Store)). A
// conversion such as (*store.Store)(nil), which checks at compile time
// that the store satisfies an interface, holds no store and is not listed.
func storeTypeUses(fset *token.FileSet, f *ast.File) []token.Position {
	name := ""
	for _, imp := range f.Imports {
		if path, _ := strconv.Unquote(imp.Path.Value); path == module+"/internal/store" {
			name = "store"
			if imp.Name != nil {
				name = imp.Name.Name
			}
		}
	}
	if name == "" || name == "_" {
		return nil
	}
	// A type can hold another (a struct's field, a function's parameter):
	// each use is listed once.
	seen := map[token.Pos]bool{}
	var out []token.Position
	inType := func(typ ast.Expr) {
		if typ == nil {
			return
		}
		ast.Inspect(typ, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "Store" {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == name && !seen[sel.Pos()] {
					seen[sel.Pos()] = true
					out = append(out, fset.Position(sel.Pos()))
				}
			}
			return true
		})
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Field: // struct fields, parameters and results, interface methods
			inType(n.Type)
		case *ast.ValueSpec: // var x *store.Store
			inType(n.Type)
		case *ast.TypeSpec: // type x = store.Store
			inType(n.Type)
		}
		return true
	})
	return out
}

func TestOnlyTheNodesWiringHoldsTheWholeStore(t *testing.T) {
	found := map[string][]string{} // package → where it names store.Store
	fset := token.NewFileSet()
	for _, p := range load(t) {
		entries, err := os.ReadDir(p.Dir)
		require.NoError(t, err)
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, e.Name()), nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			for _, pos := range storeTypeUses(fset, f) {
				found[p.Path] = append(found[p.Path], fmt.Sprintf("%s/%s:%d", p.Path, e.Name(), pos.Line))
			}
		}
	}
	// The exception is real: the wiring does hold the store, so the walk
	// above sees what it looks for.
	assert.NotEmpty(t, found["internal/node"], "internal/node names no *store.Store: is the check still reading the files?")
	var outside []string
	for path, uses := range found {
		if !matchAny(wholeStore, path) {
			outside = append(outside, uses...)
		}
	}
	sort.Strings(outside)
	assert.Empty(t, outside, "production code outside %v takes the whole store: declare the interface of the methods it uses where it is used (docs/architecture.md)", wholeStore)
}

func TestTheStoreCheckFindsTheStoreAsAType(t *testing.T) {
	const src = `package x

import (
	"context"

	records "github.com/keeperhq/keeper/internal/store"
)

type Source interface{ LogKey(ctx context.Context) (string, error) }

var _ Source = (*records.Store)(nil) // a compile-time check, no store held

type A struct {
	Store *records.Store
}

func f(st *records.Store) {}

func g() (sts []*records.Store) { return nil }

var h func(records.Store)

type alias = records.Store

// records.Store in a comment is no use.
func i() { var st *records.Store; _ = st }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, parser.SkipObjectResolution)
	require.NoError(t, err)
	var lines []int
	for _, pos := range storeTypeUses(fset, f) {
		lines = append(lines, pos.Line)
	}
	assert.Equal(t, []int{14, 17, 19, 21, 23, 26}, lines)
}
