package architecture

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// temporalCalls are the Temporal client's calls keeper makes. A type with a
// method of one of these names stands in for the client; only the one fake
// may (internal/temporalfake), so a test double is written once.
var temporalCalls = map[string]bool{
	"ExecuteWorkflow": true, "SignalWithStartWorkflow": true, "DescribeWorkflowExecution": true,
	"SignalWorkflow": true, "CancelWorkflow": true, "TerminateWorkflow": true, "QueryWorkflow": true,
}

// theFake is the package that holds the one Temporal double.
const theFake = "internal/temporalfake"

// storeOpeners are the calls that open a store, and storeTests the
// packages whose tests may call them: storetest, which every other test
// opens its store through, and the store's own tests of opening (a newer
// schema refused, a password never shown, migrations carried over).
var (
	storeOpeners = map[string]bool{"Open": true, "OpenPostgres": true, "OpenAtVersion": true}
	storeTests   = []string{"internal/store", "internal/store/storetest"}
)

// doubles lists, in one file, the methods that stand in for the Temporal
// client, the imports of gomock's Temporal mocks, and the calls that open a
// store (internal/store's Open, OpenPostgres, OpenAtVersion, under
// whatever name the file imports it).
func doubles(fset *token.FileSet, f *ast.File) (temporal, opens []string) {
	storeName := ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		switch {
		case p == "go.temporal.io/sdk/mocks":
			temporal = append(temporal, fmt.Sprintf("%d: imports %s", fset.Position(imp.Pos()).Line, p))
		case p == module+"/internal/store":
			storeName = "store"
			if imp.Name != nil {
				storeName = imp.Name.Name
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncDecl:
			if n.Recv != nil && temporalCalls[n.Name.Name] {
				temporal = append(temporal, fmt.Sprintf("%d: method %s", fset.Position(n.Pos()).Line, n.Name.Name))
			}
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok && storeName != "" && id.Name == storeName && storeOpeners[n.Sel.Name] {
				opens = append(opens, fmt.Sprintf("%d: %s.%s", fset.Position(n.Pos()).Line, storeName, n.Sel.Name))
			}
		}
		return true
	})
	return temporal, opens
}

func TestOneFakeStandsInForTemporalAndOnlyStoretestOpensAStoreInTests(t *testing.T) {
	root := moduleRoot(t)
	fset := token.NewFileSet()
	var temporal, opens []string
	fakeSeen := false
	for _, rel := range moduleGoFiles(t, root, func(string, []byte) bool { return true }) {
		f, err := parser.ParseFile(fset, filepath.Join(root, rel), nil, parser.SkipObjectResolution)
		require.NoError(t, err)
		tmp, op := doubles(fset, f)
		dir := path.Dir(rel)
		if dir == theFake {
			fakeSeen = fakeSeen || len(tmp) > 0
		} else {
			for _, w := range tmp {
				temporal = append(temporal, rel+":"+w)
			}
		}
		if strings.HasSuffix(rel, "_test.go") && !matchAny(storeTests, dir) {
			for _, w := range op {
				opens = append(opens, rel+":"+w)
			}
		}
	}
	require.True(t, fakeSeen, "the check found no Temporal method in %s: is it still reading the files?", theFake)
	sort.Strings(temporal)
	sort.Strings(opens)
	assert.Empty(t, temporal, "a Temporal double outside %s: record starts and inject failures with temporalfake.Client", theFake)
	assert.Empty(t, opens, "a test opens a store itself: use storetest.SQLite, storetest.Postgres, storetest.Open or storetest.Each")
}

func TestTheDoublesCheckFindsADoubleAndAStoreOpenedInATest(t *testing.T) {
	const src = `package x_test

import (
	"context"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/mocks"
	records "github.com/keeperhq/keeper/internal/store"
)

type starter struct{}

func (starter) ExecuteWorkflow(context.Context, client.StartWorkflowOptions, any, ...any) (client.WorkflowRun, error) {
	return nil, nil
}

var _ = mocks.NewClient

func open() { st, _ := records.Open(context.Background(), "x.db"); _ = st }

// ExecuteWorkflow in a comment, and a function of that name, are no double.
func ExecuteWorkflow() {}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x_test.go", src, parser.SkipObjectResolution)
	require.NoError(t, err)
	temporal, opens := doubles(fset, f)
	assert.Equal(t, []string{"7: imports go.temporal.io/sdk/mocks", "13: method ExecuteWorkflow"}, temporal)
	assert.Equal(t, []string{"19: records.Open"}, opens)
}
