package cli_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/receipt"
)

// `keeper submit FILE` with no --chains anchors on every chain the API is
// configured with, so docs/cli.md's example works on a fresh `keeper dev`
// (etherlink and solana), not only where the stub chain is configured.
func TestSubmitWithoutChainsAnchorsOnEveryConfiguredChain(t *testing.T) {
	s := newServerWith(t, "etherlink", "solana")

	f := writeFile(t, t.TempDir(), "report.txt", []byte("quarterly report\n"))
	out, _, err := keeper(t, "submit", f, "--api", s.url)
	require.NoError(t, err)
	id := strings.Split(strings.TrimSpace(out), "\t")[0]
	ev, err := s.st.GetEvidence(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, []string{"etherlink", "solana"}, ev.Chains)

	_, _, err = keeper(t, "submit", f, "--chains", "stub", "--api", s.url)
	require.Error(t, err, "an unconfigured chain asked for by name is still refused")
	assert.Contains(t, err.Error(), "unknown_chain")
}

// Many files go to the batch endpoint, a thousand a request; one file to
// the single endpoint.
func TestSubmitManyFilesSendsThemInBatchesOfAThousand(t *testing.T) {
	s := newServer(t)
	dir := t.TempDir()
	files := make([]string, 1001)
	for i := range files {
		files[i] = writeFile(t, dir, fmt.Sprintf("f%04d.txt", i), []byte(fmt.Sprint("file ", i)))
	}
	out, _, err := keeper(t, append([]string{"submit", "--api", s.url}, files...)...)
	require.NoError(t, err)

	assert.Equal(t, []string{"/v1/evidence/batch", "/v1/evidence/batch"}, s.postPaths())
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, len(files))
	for i, line := range lines {
		cols := strings.Split(line, "\t")
		require.Len(t, cols, 3, line)
		sum := sha256.Sum256([]byte(fmt.Sprint("file ", i)))
		assert.Equal(t, hex.EncodeToString(sum[:]), cols[1], "line %d", i)
		assert.Equal(t, files[i], cols[2], "the lines come in the files' order")
		ev, err := s.st.GetEvidence(context.Background(), cols[0])
		require.NoError(t, err, "line %d names a stored evidence", i)
		assert.Equal(t, sum, ev.Digest)
	}
	n, err := s.st.PendingCount(context.Background())
	require.NoError(t, err)
	assert.Equal(t, len(files), n, "each file stored once")

	_, _, err = keeper(t, "submit", "--api", s.url, files[0])
	require.NoError(t, err)
	assert.Equal(t, "/v1/evidence", s.postPaths()[2])
}

func TestSubmitManyFilesNamesEachFileTheAPIRefused(t *testing.T) {
	s := newServer(t)
	dir := t.TempDir()
	a, b := writeFile(t, dir, "a.txt", []byte("a")), writeFile(t, dir, "b.txt", []byte("b"))
	out, _, err := keeper(t, "submit", "--priority", "11", a, b, "--api", s.url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "submit "+a+": items[0].priority must be an integer from 1 (highest) to 10 (HTTP 400, invalid_priority)")
	assert.Contains(t, err.Error(), "submit "+b+": items[1].priority")
	assert.Empty(t, out)
	assert.Empty(t, s.stored(t))
}

// waitFor calls do once n evidence are stored and a client has read one,
// in the background, as the anchoring would while `submit --wait` waits.
func (s *server) waitFor(t *testing.T, n int, do func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	done := make(chan error, 1)
	go func() {
		assert.Eventually(t, func() bool { return len(s.storedNow(ctx)) >= n && s.reads.Load() > 0 }, 10*time.Second, 5*time.Millisecond,
			"%d evidence stored and read", n)
		done <- do(ctx)
	}()
	t.Cleanup(func() {
		assert.NoError(t, <-done)
		cancel()
	})
}

func (s *server) storedNow(ctx context.Context) []store.Evidence {
	evs, _, _ := s.st.ListEvidence(ctx, store.ListFilter{Limit: 1000})
	return evs
}

func TestSubmitWaitWritesAReceiptBesideEachFileOnceConfirmed(t *testing.T) {
	s := newServer(t)
	dir := t.TempDir()
	contents := []string{"contract v3\n", "photo bytes"}
	files := []string{writeFile(t, dir, "contract.txt", []byte(contents[0])), writeFile(t, dir, "photo.jpg", []byte(contents[1]))}
	s.waitFor(t, 2, s.confirmAll)

	out, progress, err := keeper(t, "submit", "--wait", "--interval", "10ms", files[0], files[1], "--api", s.url)
	require.NoError(t, err, progress)
	assert.Contains(t, progress, "0 of 2 confirmed; "+files[0]+": pending (stub pending)")
	assert.Contains(t, progress, "2 of 2 confirmed; "+files[1]+": confirmed (stub confirmed)", "the last line counts the last file")
	for i, f := range files {
		assert.Contains(t, out, "wrote "+f+".receipt.json\n")
		raw, err := os.ReadFile(f + ".receipt.json")
		require.NoError(t, err)
		r, err := receipt.Parse(raw)
		require.NoError(t, err)
		sum := sha256.Sum256([]byte(contents[i]))
		assert.Equal(t, hex.EncodeToString(sum[:]), r.Digest)
		require.Len(t, r.Anchors, 1)
		assert.NoError(t, r.CheckProof(r.Anchors[0]))
	}
}

func TestSubmitWaitFailsOnADeadLetteredEvidence(t *testing.T) {
	s := newServer(t)
	f := writeFile(t, t.TempDir(), "a.txt", []byte("a"))
	s.waitFor(t, 1, func(ctx context.Context) error {
		b, _, err := s.st.FormBatch(ctx, "stub", 10)
		if err != nil {
			return err
		}
		return s.st.DeadLetterBatch(ctx, b.ID, "stub: permanently rejected")
	})
	_, _, err := keeper(t, "submit", "--wait", "--interval", "10ms", f, "--api", s.url)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "dead-lettered: stub: permanently rejected")
	assert.NoFileExists(t, f+".receipt.json")
}

func TestSubmitWaitGivesUpAfterItsTimeoutNamingTheEvidence(t *testing.T) {
	s := newServer(t)
	f := writeFile(t, t.TempDir(), "a.txt", []byte("a"))
	_, _, err := keeper(t, "submit", "--wait", "--interval", "10ms", "--timeout", "100ms", f, "--api", s.url)
	require.Error(t, err)
	id := s.stored(t)[0].ID
	assert.Equal(t, f+": evidence "+id+" is not confirmed after --timeout; `keeper receipt "+id+" > "+f+".receipt.json` fetches its receipt later", err.Error())
}

func TestSubmitWaitRefusesToOverwriteAReceiptAndSubmitsNothing(t *testing.T) {
	s := newServer(t)
	dir := t.TempDir()
	a, b := writeFile(t, dir, "a.txt", []byte("a")), writeFile(t, dir, "b.txt", []byte("b"))
	writeFile(t, dir, "b.txt.receipt.json", []byte("{}"))
	_, _, err := keeper(t, "submit", "--wait", a, b, "--api", s.url)
	require.Error(t, err)
	assert.Equal(t, b+".receipt.json already exists; move it away to anchor "+b+" again", err.Error())
	assert.Empty(t, s.stored(t))
}
