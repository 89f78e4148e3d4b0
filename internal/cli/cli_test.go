package cli_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/starter"
	"github.com/keeperhq/keeper/internal/starter/openapitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
)

type server struct {
	st    *store.Store
	url   string
	reads atomic.Int32 // GET requests answered

	mu    sync.Mutex
	posts []string // the path of every POST, in order
}

func newServer(t *testing.T) *server {
	t.Helper()
	return newServerWith(t, "stub")
}

// newServerWith serves keeper's API configured with chains.
func newServerWith(t *testing.T, chains ...string) *server {
	t.Helper()
	st := storetest.SQLite(t)
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	api := &starter.API{Store: st, Logger: log, Features: []starter.Feature{
		&anchor.HTTP{Store: st, Chains: chains, MaxPending: 100, MaxBacklog: 10_000, Logger: log}, // no batches form here: room for a few thousand files
	}}
	s := &server{st: st}
	h := openapitest.Handler(t, api.Handler())
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			s.mu.Lock()
			s.posts = append(s.posts, r.URL.Path)
			s.mu.Unlock()
		}
		h.ServeHTTP(w, r)
		if r.Method == http.MethodGet {
			s.reads.Add(1)
		}
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL
	return s
}

// keeper runs the keeper command with args and returns its output and error.
func keeper(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	root := cli.Root(nil)
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(strings.NewReader(""))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	err := root.ExecuteContext(ctx)
	return out.String(), errOut.String(), err
}

func (s *server) stored(t *testing.T) []store.Evidence {
	t.Helper()
	evs, _, err := s.st.ListEvidence(context.Background(), store.ListFilter{Limit: 1000})
	require.NoError(t, err)
	return evs
}

func (s *server) insert(t *testing.T, seed string) store.Evidence {
	t.Helper()
	ev, _, err := s.st.InsertEvidence(context.Background(), store.NewEvidence{Digest: sha256.Sum256([]byte(seed)), Chains: []string{"stub"}, Priority: 5})
	require.NoError(t, err)
	return ev
}

// confirmAll anchors every pending stub evidence in one batch, as a
// confirmed AnchorBatch would.
func (s *server) confirmAll(ctx context.Context) error {
	b, ok, err := s.st.FormBatch(ctx, "stub", 100)
	if err != nil || !ok {
		return fmt.Errorf("form a batch: %v (formed: %v)", err, ok)
	}
	leaves, err := s.st.BatchLeaves(ctx, b.ID)
	if err != nil {
		return err
	}
	tree, err := merkle.Build(leaves)
	if err != nil {
		return err
	}
	if err := s.st.MarkSubmitted(ctx, b.ID, tree.Root(), "0xabc"); err != nil {
		return err
	}
	return s.st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: "0xabc", Block: 5, BlockTime: time.Now(), Network: "stub:local"})
}

func writeFile(t *testing.T, dir, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(p, content, 0o600))
	return p
}

func TestSubmitPrintsOneLinePerFileWithItsIDAndSHA256(t *testing.T) {
	s := newServer(t)
	dir := t.TempDir()
	contents := [][]byte{[]byte("invoice 2024-001\n"), bytes.Repeat([]byte{0, 1, 2, 3}, 100_000)}
	files := []string{writeFile(t, dir, "invoice.txt", contents[0]), writeFile(t, dir, "scan.bin", contents[1])}

	out, _, err := keeper(t, "submit", files[0], files[1], "--api", s.url)
	require.NoError(t, err)

	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 2, "output: %q", out)
	for i, line := range lines {
		fields := strings.Split(line, "\t")
		require.Len(t, fields, 3, "line %q", line)
		sum := sha256.Sum256(contents[i])
		want := hex.EncodeToString(sum[:])
		assert.Regexp(t, `^ev_[0-9a-f]{24}$`, fields[0])
		assert.Equal(t, want, fields[1])
		assert.Equal(t, files[i], fields[2])

		ev, err := s.st.GetEvidence(context.Background(), fields[0])
		require.NoError(t, err, "the printed id is stored")
		assert.Equal(t, sum, ev.Digest)
		assert.Equal(t, []string{"stub"}, ev.Chains)
		assert.Equal(t, store.StatusPending, ev.Status)
	}
	assert.Len(t, s.stored(t), 2)
}

func TestSubmitTakesTheAPIFromKEEPER_API_URL(t *testing.T) {
	s := newServer(t)
	t.Setenv("KEEPER_API_URL", s.url)
	f := writeFile(t, t.TempDir(), "a.txt", []byte("a"))
	out, _, err := keeper(t, "submit", f)
	require.NoError(t, err)
	assert.Contains(t, out, hex.EncodeToString(func() []byte { d := sha256.Sum256([]byte("a")); return d[:] }()))
	assert.Len(t, s.stored(t), 1)
}

func TestSubmitOfAMissingFileFailsNamingItAndSubmitsNothing(t *testing.T) {
	s := newServer(t)
	dir := t.TempDir()
	present := writeFile(t, dir, "present.txt", []byte("here"))
	missing := filepath.Join(dir, "missing-file.pdf")

	out, _, err := keeper(t, "submit", present, missing, "--api", s.url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
	assert.Contains(t, err.Error(), "no such file")
	assert.Empty(t, out)
	assert.Empty(t, s.stored(t), "a missing file submits nothing, not even the files before it")
}

func TestSubmitWithABadPriorityFailsWithTheAPIsMessage(t *testing.T) {
	s := newServer(t)
	f := writeFile(t, t.TempDir(), "a.txt", []byte("a"))
	_, _, err := keeper(t, "submit", f, "--priority", "11", "--api", s.url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), f)
	assert.Contains(t, err.Error(), "priority must be an integer from 1")
	assert.Contains(t, err.Error(), "invalid_priority")
	assert.NotContains(t, err.Error(), "\n", "one line")
	assert.NotContains(t, err.Error(), `"type"`, "the message, not the problem details' JSON")
	assert.Empty(t, s.stored(t))
}

func TestStatusPrintsTheEvidenceStatus(t *testing.T) {
	s := newServer(t)
	ev := s.insert(t, "status me")

	out, _, err := keeper(t, "status", ev.ID, "--api", s.url)
	require.NoError(t, err)
	first := strings.SplitN(out, "\n", 2)[0]
	assert.Contains(t, first, ev.ID)
	assert.Contains(t, first, "pending")
	assert.Contains(t, first, hex.EncodeToString(ev.Digest[:]))
	assert.Contains(t, out, "stub")

	// After a dead-letter the status shows it with the last error.
	b, ok, err := s.st.FormBatch(context.Background(), "stub", 10)
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, s.st.DeadLetterBatch(context.Background(), b.ID, "stub: rejected for good"))
	out, _, err = keeper(t, "status", ev.ID, "--api", s.url)
	require.NoError(t, err)
	assert.Contains(t, out, "dead_letter")
	assert.Contains(t, out, "stub: rejected for good")

	// Once confirmed, it shows the anchor's block time and the bound the
	// receipt proves.
	ctx := context.Background()
	ev = s.insert(t, "confirm me")
	b, ok, err = s.st.FormBatch(ctx, "stub", 10)
	require.NoError(t, err)
	require.True(t, ok)
	leaves, err := s.st.BatchLeaves(ctx, b.ID)
	require.NoError(t, err)
	tree, err := merkle.Build(leaves)
	require.NoError(t, err)
	require.NoError(t, s.st.MarkSubmitted(ctx, b.ID, tree.Root(), "0xfeed"))
	at := time.Date(2026, 11, 27, 12, 0, 5, 0, time.UTC)
	require.NoError(t, s.st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: "0xfeed", Block: 42, BlockTime: at}))
	out, _, err = keeper(t, "status", ev.ID, "--api", s.url)
	require.NoError(t, err)
	assert.Contains(t, out, "tx 0xfeed block 42 at 2026-11-27T12:00:05Z")
	assert.Contains(t, out, "existed no later than 2026-11-27T12:00:05Z, keeper says")
}

func TestStatusAsJSONPrintsTheAPIsAnswer(t *testing.T) {
	s := newServer(t)
	ev := s.insert(t, "json")
	out, _, err := keeper(t, "status", ev.ID, "--json", "--api", s.url)
	require.NoError(t, err)
	assert.Contains(t, out, `"id": "`+ev.ID+`"`)
	assert.Contains(t, out, `"status": "pending"`)
}

func TestStatusOfAnUnknownEvidenceFailsWithNoEvidence(t *testing.T) {
	s := newServer(t)
	out, _, err := keeper(t, "status", "ev_000000000000000000000000", "--api", s.url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "no evidence")
	assert.Contains(t, err.Error(), "ev_000000000000000000000000")
	assert.Empty(t, out)
}

func TestReceiptOfAPendingEvidenceFailsWithTheAPIsMessage(t *testing.T) {
	s := newServer(t)
	ev := s.insert(t, "not yet")
	out, _, err := keeper(t, "receipt", ev.ID, "--api", s.url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "is pending; its receipt exists once it is confirmed")
	assert.Contains(t, err.Error(), "not_confirmed")
	assert.Contains(t, err.Error(), "409")
	assert.Empty(t, out, "no partial receipt is printed")
}

func TestReceiptOfAConfirmedEvidencePrintsAReceiptWhoseProofChecks(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	ev := s.insert(t, "confirmed")
	s.insert(t, "neighbour")
	require.NoError(t, s.confirmAll(ctx))

	out, _, err := keeper(t, "receipt", ev.ID, "--api", s.url)
	require.NoError(t, err)
	r, err := receipt.Parse([]byte(out))
	require.NoError(t, err)
	assert.Equal(t, ev.ID, r.EvidenceID)
	require.Len(t, r.Anchors, 1)
	assert.NoError(t, r.CheckProof(r.Anchors[0]))
}

func TestAnUnreachableAPIFailsWithCannotReachKeeperAPI(t *testing.T) {
	f := writeFile(t, t.TempDir(), "a.txt", []byte("a"))
	for _, args := range [][]string{
		{"submit", f},
		{"status", "ev_000000000000000000000000"},
		{"receipt", "ev_000000000000000000000000"},
	} {
		_, _, err := keeper(t, append(args, "--api", "http://127.0.0.1:1")...)
		require.Error(t, err, "%v", args)
		assert.Contains(t, err.Error(), "cannot reach keeper API", "%v", args)
		assert.Contains(t, err.Error(), "http://127.0.0.1:1", "%v", args)
	}
}

func TestConfigMarkdownPrintsTheTableOfEverySetting(t *testing.T) {
	out, _, err := keeper(t, "config", "--markdown")
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	knobs := (&config.Config{}).Knobs()
	require.Len(t, lines, 2+len(knobs), "header, separator and one row per setting")
	assert.True(t, strings.HasPrefix(lines[0], "| env |"), lines[0])
	assert.Regexp(t, `^\|( --- \|)+$`, lines[1])
	for i, k := range knobs {
		row := lines[2+i]
		assert.Contains(t, row, "`"+k.Env+"`")
		assert.Contains(t, row, "`--"+k.Flag+"`")
		assert.Contains(t, row, "`"+k.Default+"`")
		assert.Equal(t, strings.Count(lines[0], "|"), strings.Count(row, "|"), "row %q has as many columns as the header", row)
	}
}

func TestHealthcheckExitsZeroOnAReadyAPIAndFailsOnAnErrorAnswer(t *testing.T) {
	s := newServer(t)
	_, _, err := keeper(t, "healthcheck", s.url+"/health")
	require.NoError(t, err)

	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer down.Close()
	_, _, err = keeper(t, "healthcheck", down.URL+"/readyz")
	require.ErrorContains(t, err, "503")
}

func TestReceiptOfAnArchivedEvidenceIsReadFromTheArchiveTheAPINames(t *testing.T) {
	s := newServer(t)
	ev := s.insert(t, "archived")
	require.NoError(t, s.confirmAll(context.Background()))
	dir := t.TempDir()
	ar := &anchor.Archiver{Store: s.st, Dir: dir, Retention: time.Nanosecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Archived: anchor.NewArchivedCounter()}
	// The evidence is archived once it is older than the retention, a
	// nanosecond: as soon as the clock has moved past its confirmation.
	require.Eventually(t, func() bool {
		n, err := ar.ArchiveOnce(context.Background())
		return err == nil && n == 1
	}, 10*time.Second, time.Millisecond, "archived")

	_, _, err := keeper(t, "receipt", ev.ID, "--api", s.url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "moved to the receipts archive", "without --archive the 410 says where the receipt went")
	assert.Contains(t, err.Error(), "--archive")

	out, _, err := keeper(t, "receipt", ev.ID, "--api", s.url, "--archive", dir)
	require.NoError(t, err)
	r, err := receipt.Parse([]byte(out))
	require.NoError(t, err)
	assert.Equal(t, ev.ID, r.EvidenceID)
	require.Len(t, r.Anchors, 1)
	assert.NoError(t, r.CheckProof(r.Anchors[0]))

	out, _, err = keeper(t, "receipt", ev.ID, "--api", "http://127.0.0.1:1", "--archive", dir)
	require.NoError(t, err, "with the API down the archive alone answers")
	assert.Contains(t, out, ev.ID)

	_, _, err = keeper(t, "receipt", "ev_000000000000000000000000", "--api", "http://127.0.0.1:1", "--archive", dir)
	assert.ErrorContains(t, err, "no receipt for this evidence")
}

func (s *server) postPaths() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.posts...)
}
