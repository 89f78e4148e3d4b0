package cli_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/store"
)

// logInDataDir makes a log of n entries in the store of a data directory
// the environment names (KEEPER_DATA_DIR), and returns its verifier key
// and signer.
func logInDataDir(t *testing.T, n int) (string, *evlog.Signer) {
	t.Helper()
	t.Setenv("KEEPER_DATA_DIR", t.TempDir())
	skey, vkey, err := evlog.GenerateKey("keeper.test/log")
	require.NoError(t, err)
	signer, err := evlog.NewSigner(skey, "keeper.test/log")
	require.NoError(t, err)
	growLog(t, signer, n)
	return vkey, signer
}

// growLog adds n evidence to the data directory's log and signs a checkpoint.
func growLog(t *testing.T, signer *evlog.Signer, n int) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(os.Getenv("KEEPER_DATA_DIR"), "keeper.db"))
	require.NoError(t, err)
	defer st.Close()
	nes := make([]store.NewEvidence, n)
	for i := range nes {
		_, err := rand.Read(nes[i].Digest[:])
		require.NoError(t, err)
		nes[i].Chains, nes[i].Priority = []string{"stub"}, 5
	}
	_, err = st.InsertEvidenceBatch(ctx, nes)
	require.NoError(t, err)
	seq := &logsvc.Sequencer{Store: st, Signer: signer, Interval: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, err = seq.Sync(ctx)
	require.NoError(t, err)
}

func TestLogExportThenAuditOfTheDirectoryPasses(t *testing.T) {
	vkey, _ := logInDataDir(t, 300)
	dir := filepath.Join(t.TempDir(), "mirror")
	out, _, err := keeper(t, "log", "export", dir)
	require.NoError(t, err)
	assert.Contains(t, out, "exported the log of 300 entries to "+dir)
	for _, f := range []string{"checkpoint", "key", "anchors.json", "checkpoints/300", "tile/0/000", "tile/entries/001.p/44"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}

	out, errOut, err := keeper(t, "log", "audit", "--log", dir, "--log-key", vkey)
	require.NoError(t, err, out)
	assert.Contains(t, out, "latest checkpoint: 300 entries")
	assert.Contains(t, out, "no findings")
	assert.NotContains(t, errOut, "pin it with --log-key")

	keyFile := filepath.Join(t.TempDir(), "log.vkey")
	require.NoError(t, os.WriteFile(keyFile, []byte(vkey+"\n"), 0o644))
	_, _, err = keeper(t, "log", "audit", "--log", dir, "--log-key", keyFile)
	require.NoError(t, err, "the key may be given as a file")

	_, errOut, err = keeper(t, "log", "audit", "--log", dir)
	require.NoError(t, err)
	assert.Contains(t, errOut, "warning: the log's key was read from the log itself")
}

func TestLogAuditFailsWithOneLinePerFinding(t *testing.T) {
	vkey, _ := logInDataDir(t, 300)
	dir := t.TempDir()
	_, _, err := keeper(t, "log", "export", dir)
	require.NoError(t, err)
	bundle := filepath.Join(dir, "tile", "entries", "000")
	b, err := os.ReadFile(bundle)
	require.NoError(t, err)
	b[2] ^= 1 // entry 0
	require.NoError(t, os.WriteFile(bundle, b, 0o644))

	out, _, err := keeper(t, "log", "audit", "--log", dir, "--log-key", vkey)
	require.Error(t, err)
	assert.Equal(t, "audit: 1 finding(s)", err.Error())
	assert.Contains(t, out, "FINDING entries: entry 0 in the entry bundles does not hash to its leaf")
}

func TestLogCommandsRefuseBadInputWithOneLine(t *testing.T) {
	vkey, _ := logInDataDir(t, 3)
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"log", "audit", "--log", dir, "--rpc", "http://x"}, "--rpc http://x: write CHAIN=URL"},
		{[]string{"log", "audit", "--log", dir, "--account", "etherlink"}, "--account etherlink: write CHAIN=ADDRESS"},
		{[]string{"log", "audit", "--log", dir, "--account", "stub=abc"}, "no endpoint for stub"},
		{[]string{"log", "audit", "--log", dir, "--log-key", "nonsense"}, "--log-key: neither a verifier key"},
		{[]string{"log", "audit", "--log", filepath.Join(dir, "none")}, "--log: evlog: the log directory"},
		{[]string{"log", "audit", "--log", dir, "--log-key", vkey}, "checkpoint: not published by the log"}, // an empty directory: nothing exported
		{[]string{"log", "audit", "--log", dir, "--scan-blocks", "0"}, "--scan-blocks must be at least 1"},
		{[]string{"log", "export"}, "accepts 1 arg(s)"},
	} {
		_, _, err := keeper(t, c.args...)
		require.Error(t, err, c.args)
		assert.Contains(t, err.Error(), c.msg, c.args)
		assert.NotContains(t, err.Error(), "\n", c.args)
	}
}

func TestLogExportOfAnEmptyLogSaysSo(t *testing.T) {
	t.Setenv("KEEPER_DATA_DIR", t.TempDir())
	_, _, err := keeper(t, "log", "export", t.TempDir())
	require.Error(t, err)
	assert.Equal(t, "the log has no checkpoint yet: nothing to export", err.Error())
}

func TestLogExportFollowMirrorsTheLogAsItGrows(t *testing.T) {
	_, signer := logInDataDir(t, 3)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := cli.Root(nil)
	var out, errOut bytes.Buffer
	root.SetArgs([]string{"log", "export", dir, "--follow", "--interval", "20ms"})
	root.SetOut(&out)
	root.SetErr(&errOut)
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	exportedSize := func() uint64 {
		b, err := os.ReadFile(filepath.Join(dir, "checkpoint"))
		if err != nil {
			return 0
		}
		c, err := evlog.ParseBody(string(b))
		if err != nil {
			return 0
		}
		return c.Size
	}
	require.Eventually(t, func() bool { return exportedSize() == 3 }, 10*time.Second, 10*time.Millisecond)

	growLog(t, signer, 1) // the log grows while the mirror runs
	require.Eventually(t, func() bool { return exportedSize() == 4 }, 10*time.Second, 10*time.Millisecond)

	cancel()
	require.NoError(t, <-done)
	assert.Contains(t, out.String(), "exported the log of 3 entries")
	assert.Contains(t, out.String(), "exported the log of 4 entries")
}

// TestLogKeygenWritesAKeyOnceAndPrintsItsVerifierKey: the key file an
// operator hands every worker, made for the configured origin, private to
// its owner; a second run refuses to replace it (a new key is a new log).
func TestLogKeygenWritesAKeyOnceAndPrintsItsVerifierKey(t *testing.T) {
	t.Setenv("KEEPER_LOG_ORIGIN", "keeper.example.org/log")
	file := filepath.Join(t.TempDir(), "secrets", "log.key")
	keygen := func() (string, error) {
		root := cli.Root(nil)
		var out, errOut bytes.Buffer
		root.SetArgs([]string{"log", "keygen", file})
		root.SetOut(&out)
		root.SetErr(&errOut)
		err := root.Execute()
		return out.String(), err
	}
	out, err := keygen()
	require.NoError(t, err)
	fi, err := os.Stat(file)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	skey, err := os.ReadFile(file)
	require.NoError(t, err)
	signer, err := evlog.NewSigner(string(skey), "keeper.example.org/log")
	require.NoError(t, err)
	assert.Contains(t, out, signer.Key().Text+"\n", "the verifier key of the key written")
	assert.NotContains(t, out, "PRIVATE", "the private key is never printed")

	_, err = keygen()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already holds a log key")
	again, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, skey, again, "the key is kept")
}
