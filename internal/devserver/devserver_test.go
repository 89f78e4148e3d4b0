package devserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	enums "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"go.temporal.io/server/common/log/tag"

	"github.com/keeperhq/keeper/internal/dev/testkit"
)

func startServer(t *testing.T, o Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	begin := time.Now()
	s, err := Start(ctx, o)
	require.NoError(t, err)
	t.Logf("server started in %v at %s (ui %q)", time.Since(begin).Round(time.Millisecond), s.FrontendAddr(), s.UIAddr())
	t.Cleanup(func() { assert.NoError(t, s.Stop()) })
	return s
}

func dial(t *testing.T, s *Server) client.Client {
	t.Helper()
	c, err := client.Dial(client.Options{
		HostPort:  s.FrontendAddr(),
		Namespace: s.Namespace(),
		Logger:    sdklog.NewStructuredLogger(slog.New(slog.DiscardHandler)),
	})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

func testLogger(t *testing.T) (*slog.Logger, *testkit.SyncBuffer) {
	buf := &testkit.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("server logs:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug})), buf
}

func greet(_ workflow.Context, name string) (string, error) {
	return "hello " + name, nil
}

func TestPersistsAcrossRestart(t *testing.T) {
	dataDir := filepath.Join(t.TempDir(), "nested", "data")
	logger, _ := testLogger(t)
	opts := Options{
		DataDir: dataDir,
		Logger:  logger,
		SearchAttributes: map[string]enums.IndexedValueType{
			"KeeperChain": enums.INDEXED_VALUE_TYPE_KEYWORD,
		},
	}

	s := startServer(t, opts)
	assert.Equal(t, "default", s.Namespace())
	assert.Empty(t, s.UIAddr())
	host, _, err := net.SplitHostPort(s.FrontendAddr())
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", host)

	fi, err := os.Stat(dataDir)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	_, err = os.Stat(filepath.Join(dataDir, DBFileName))
	require.NoError(t, err)
	_, err = os.Stat(filepath.Join(dataDir, DBFileName+"-wal"))
	require.NoError(t, err, "journal_mode=wal must be in effect")

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := dial(t, s)

	ns, err := c.WorkflowService().DescribeNamespace(ctx, &workflowservice.DescribeNamespaceRequest{Namespace: "default"})
	require.NoError(t, err)
	assert.Equal(t, "default", ns.GetNamespaceInfo().GetName())

	sas, err := c.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	assert.Equal(t, enums.INDEXED_VALUE_TYPE_KEYWORD, sas.GetCustomAttributes()["KeeperChain"])

	runID := runGreet(ctx, t, c, "greet-1", "ethereum")
	c.Close()

	require.NoError(t, s.Stop())
	require.NoError(t, s.Stop(), "Stop must be idempotent")

	// Restart on the same data dir, with one more search attribute than the
	// database was created with.
	opts.SearchAttributes["KeeperBlock"] = enums.INDEXED_VALUE_TYPE_INT
	s2 := startServer(t, opts)
	c2 := dial(t, s2)

	desc, err := c2.DescribeWorkflowExecution(ctx, "greet-1", runID)
	require.NoError(t, err)
	assert.Equal(t, enums.WORKFLOW_EXECUTION_STATUS_COMPLETED, desc.GetWorkflowExecutionInfo().GetStatus())

	var again string
	require.NoError(t, c2.GetWorkflow(ctx, "greet-1", runID).Get(ctx, &again))
	assert.Equal(t, "hello keeper", again)

	sas, err = c2.OperatorService().ListSearchAttributes(ctx, &operatorservice.ListSearchAttributesRequest{Namespace: "default"})
	require.NoError(t, err)
	assert.Equal(t, enums.INDEXED_VALUE_TYPE_KEYWORD, sas.GetCustomAttributes()["KeeperChain"])
	assert.Equal(t, enums.INDEXED_VALUE_TYPE_INT, sas.GetCustomAttributes()["KeeperBlock"])

	// Visibility survived too, and the search attribute is queryable.
	assertListedByChain(ctx, t, c2, "ethereum", "greet-1")
}

// runGreet runs greet to completion as workflow id, tagged with KeeperChain
// = chain, on a worker that lives only as long as the run, and returns the
// run id.
func runGreet(ctx context.Context, t *testing.T, c client.Client, id, chain string) string {
	t.Helper()
	w := worker.New(c, "devserver-test", worker.Options{})
	w.RegisterWorkflow(greet)
	require.NoError(t, w.Start())
	defer w.Stop()
	run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:        id,
		TaskQueue: "devserver-test",
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword("KeeperChain").ValueSet(chain),
		),
	}, greet, "keeper")
	require.NoError(t, err)
	var got string
	require.NoError(t, run.Get(ctx, &got))
	assert.Equal(t, "hello keeper", got)
	return run.GetRunID()
}

// assertListedByChain checks that visibility lists exactly workflow id
// under KeeperChain = chain.
func assertListedByChain(ctx context.Context, t *testing.T, c client.Client, chain, id string) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		list, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{
			Namespace: "default",
			Query:     fmt.Sprintf("KeeperChain = %q", chain),
		})
		require.NoError(ct, err)
		require.Len(ct, list.GetExecutions(), 1)
		assert.Equal(ct, id, list.GetExecutions()[0].GetExecution().GetWorkflowId())
	}, 10*time.Second, 100*time.Millisecond)
}

func TestSearchAttributeTypeConflict(t *testing.T) {
	dataDir := t.TempDir()
	logger, _ := testLogger(t)
	opts := Options{
		DataDir:          dataDir,
		Logger:           logger,
		SearchAttributes: map[string]enums.IndexedValueType{"KeeperChain": enums.INDEXED_VALUE_TYPE_KEYWORD},
	}
	s := startServer(t, opts)

	_, err := Start(context.Background(), opts)
	require.Error(t, err, "a data dir in use must not be opened twice")
	assert.Contains(t, err.Error(), "already used")
	require.NoError(t, s.Stop())

	opts.SearchAttributes = map[string]enums.IndexedValueType{"KeeperChain": enums.INDEXED_VALUE_TYPE_INT}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s2, err := Start(ctx, opts)
	if s2 != nil {
		_ = s2.Stop()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "KeeperChain")
}

func TestInMemoryWithUI(t *testing.T) {
	uiPort := testkit.FreePort(t)
	logger, _ := testLogger(t)
	s := startServer(t, Options{UIPort: uiPort, Namespace: "keeper-test", Logger: logger})
	assert.Equal(t, "keeper-test", s.Namespace())
	assert.Equal(t, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(uiPort)), s.UIAddr())

	for _, path := range []string{"/", "/healthz"} {
		resp, err := http.Get(s.UIAddr() + path)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.NotEmpty(t, body, path)
	}

	// The UI talks to the frontend through its HTTP API.
	resp, err := http.Get(s.UIAddr() + "/api/v1/namespaces/keeper-test")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)

	require.NoError(t, s.Stop())
	_, err = http.Get(s.UIAddr() + "/healthz")
	assert.Error(t, err, "UI must be down after Stop")
}

func TestPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port

	_, err = Start(context.Background(), Options{FrontendPort: port})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "frontend port")

	_, err = Start(context.Background(), Options{UIPort: port})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "UI port")
}

func TestSlogLoggerLevels(t *testing.T) {
	var buf testkit.SyncBuffer
	min := new(slog.LevelVar)
	min.Set(slog.LevelWarn)
	l := newSlogLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})), min)
	l.Info("quiet")
	l.Warn("loud")
	l.With(tag.NewStringTag("component", "test")).Error("louder", tag.Error(errors.New("boom")), tag.NewDurationTag("took", time.Second))
	out := buf.String()
	assert.Contains(t, out, "component=test")
	assert.Contains(t, out, "error=boom")
	assert.Contains(t, out, "took=1s")
	assert.NotContains(t, out, "quiet")
	assert.Contains(t, out, "msg=loud")
	assert.Contains(t, out, "msg=louder")
}
