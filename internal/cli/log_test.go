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
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
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
	st := storetest.Open(t, filepath.Join(os.Getenv("KEEPER_DATA_DIR"), "keeper.db"))
	nes := make([]store.NewEvidence, n)
	for i := range nes {
		_, err := rand.Read(nes[i].Digest[:])
		require.NoError(t, err)
		nes[i].Chains, nes[i].Priority = []string{"stub"}, 5
	}
	_, err := st.InsertEvidenceBatch(ctx, nes)
	require.NoError(t, err)
	seq := &logsvc.Sequencer{Store: st, Signer: signer, Interval: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, err = seq.Sync(ctx)
	require.NoError(t, err)
}

func TestLogExportThenAuditOfTheDirectoryChecksItsTilesAndSaysNothingWasAnchored(t *testing.T) {
	vkey, _ := logInDataDir(t, 300)
	dir := filepath.Join(t.TempDir(), "mirror")
	out, _, err := keeper(t, "log", "export", dir)
	require.NoError(t, err)
	assert.Contains(t, out, "exported the log of 300 entries to "+dir)
	for _, f := range []string{"checkpoint", "key", "anchors.json", "checkpoints/300", "tile/0/000", "tile/entries/001.p/44"} {
		assert.FileExists(t, filepath.Join(dir, f))
	}

	// The stub chain anchors nothing a chain holds: the audit checks the
	// log's tiles and says that nothing was checked against a chain.
	out, errOut, err := keeper(t, "log", "audit", "--log", dir, "--log-key", vkey)
	require.Error(t, err)
	assert.Equal(t, "audit: 1 finding(s)", err.Error())
	assert.Contains(t, out, "pinned key: "+vkey)
	assert.Contains(t, out, "latest checkpoint: 300 entries")
	assert.Contains(t, out, "the latest root rebuilt from its 300 leaves")
	assert.Contains(t, out, "FINDING unread: no checkpoint anchor was read from any chain")
	assert.Contains(t, errOut, "warning: no trust root pinned: reading the accounts keeper lists")

	keyFile := filepath.Join(t.TempDir(), "log.vkey")
	require.NoError(t, os.WriteFile(keyFile, []byte(vkey+"\n"), 0o644))
	out, _, _ = keeper(t, "log", "audit", "--log", dir, "--log-key", keyFile)
	assert.Contains(t, out, "pinned key: "+vkey, "the key may be given as a file")

	_, _, err = keeper(t, "log", "audit", "--log", dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "nothing pinned: give --trust FILE")
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
	assert.Equal(t, "audit: 2 finding(s)", err.Error(), "the entry, and nothing anchored (the stub chain)")
	assert.Contains(t, out, "FINDING entries: entry 0 in the entry bundles does not hash to its leaf")
}

// TestLogAuditAsksEveryEndpointGivenForAChain: --rpc names a chain once
// per endpoint, and the audit asks them all (here none answers, and each
// is named in the finding).
func TestLogAuditAsksEveryEndpointGivenForAChain(t *testing.T) {
	vkey, _ := logInDataDir(t, 3)
	dir := t.TempDir()
	_, _, err := keeper(t, "log", "export", dir)
	require.NoError(t, err)
	out, _, err := keeper(t, "log", "audit", "--log", dir, "--log-key", vkey, "--account", "etherlink=0xaaaa000000000000000000000000000000000001",
		"--rpc", "etherlink=http://127.0.0.1:1", "--rpc", "etherlink=http://127.0.0.1:2")
	require.Error(t, err)
	assert.Contains(t, out, "FINDING unread: etherlink: cannot read etherlink=0xaaaa000000000000000000000000000000000001: ")
	assert.Contains(t, out, "endpoint 1 (http://127.0.0.1:1)")
	assert.Contains(t, out, "endpoint 2 (http://127.0.0.1:2)")
}

func TestLogCommandsRefuseBadInputWithOneLine(t *testing.T) {
	vkey, _ := logInDataDir(t, 3)
	dir := t.TempDir()
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"log", "audit", "--log", dir, "--log-key", vkey, "--rpc", "http://x"}, "--rpc http://x: write CHAIN=URL"},
		{[]string{"log", "audit", "--log", dir, "--log-key", vkey, "--account", "etherlink"}, "--account etherlink: write CHAIN=ADDRESS"},
		{[]string{"log", "audit", "--log", dir, "--log-key", vkey, "--account", "stub=abc"}, "no endpoint for stub"},
		{[]string{"log", "audit", "--log", dir, "--trust", filepath.Join(dir, "none.json")}, "--trust: open"},
		{[]string{"log", "audit", "--log", dir, "--trust", vkey, "--account", "etherlink=0xabc"}, "give --trust or --account, not both"},
		{[]string{"log", "audit", "--log", dir, "--log-key", "nonsense"}, "--log-key: neither a verifier key"},
		{[]string{"log", "audit", "--log", filepath.Join(dir, "none"), "--log-key", vkey}, "--log: evlog: the log directory"},
		{[]string{"log", "audit", "--log", dir, "--log-key", vkey}, "checkpoint: not published by the log"}, // an empty directory: nothing exported
		{[]string{"log", "audit", "--log", dir}, "nothing pinned"},
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

// TestLogTrustPrintsTheRootAWorkerListedAndTheAuditReadsEveryAccountInIt:
// the root a worker lists in the store, printed as JSON and as the note the
// log's key signed, exported beside the log, and pinned by an audit that
// cannot read the account it lists: that is a finding, not a warning.
func TestLogTrustPrintsTheRootAWorkerListedAndTheAuditReadsEveryAccountInIt(t *testing.T) {
	vkey, signer := logInDataDir(t, 10)
	_, _, err := keeper(t, "log", "trust")
	require.Error(t, err)
	assert.Equal(t, "the log has no trust root yet: a worker lists its anchoring accounts when it starts", err.Error())

	ctx := context.Background()
	st := storetest.Open(t, filepath.Join(os.Getenv("KEEPER_DATA_DIR"), "keeper.db"))
	const account = "0xaaaa000000000000000000000000000000000001"
	_, err = logsvc.ListAccounts(ctx, st, signer, []logsvc.Account{{Chain: "etherlink", Network: "eip155:128123", Address: account}}, time.Now())
	require.NoError(t, err)
	st.Close()

	plain, _, err := keeper(t, "log", "trust")
	require.NoError(t, err)
	root, err := trust.Parse([]byte(plain))
	require.NoError(t, err)
	assert.Equal(t, vkey, root.Log.Key)
	require.Len(t, root.Accounts, 1)
	assert.Equal(t, "eip155:128123:"+account, root.Accounts[0].ID)

	signed, _, err := keeper(t, "log", "trust", "--signed")
	require.NoError(t, err)
	key := signer.Key()
	opened, err := trust.Open([]byte(signed), &key)
	require.NoError(t, err)
	assert.Equal(t, root.Marshal(), opened.Marshal())

	dir := t.TempDir()
	_, _, err = keeper(t, "log", "export", dir)
	require.NoError(t, err)
	exported, err := os.ReadFile(filepath.Join(dir, "trust"))
	require.NoError(t, err)
	assert.Equal(t, signed, string(exported))

	for name, file := range map[string]string{"plain": plain, "signed": signed} {
		path := filepath.Join(t.TempDir(), "trust")
		require.NoError(t, os.WriteFile(path, []byte(file), 0o644))
		out, _, err := keeper(t, "log", "audit", "--log", dir, "--trust", path, "--rpc", "etherlink=http://127.0.0.1:1")
		require.Error(t, err, name)
		assert.Equal(t, "audit: 2 finding(s)", err.Error(), name)
		assert.Contains(t, out, "pinned trust root: 1 account(s) on 1 network(s)", name)
		assert.Contains(t, out, "FINDING unread: etherlink: cannot read eip155:128123:"+account, name)
		assert.Contains(t, out, "FINDING unread: no checkpoint anchor was read", name)
	}

	path := filepath.Join(t.TempDir(), "trust")
	require.NoError(t, os.WriteFile(path, []byte(plain), 0o644))
	_, otherKey, err := evlog.GenerateKey("keeper.test/log")
	require.NoError(t, err)
	_, _, err = keeper(t, "log", "audit", "--log", dir, "--trust", path, "--log-key", otherKey)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the root names log key")
}

// TestLogTrustRetireClosesAnAccountAtTheNextCheckpointAndRefusesAnUnknownOne:
// the operator's rotation step, on the store a worker listed its account in.
func TestLogTrustRetireClosesAnAccountAtTheNextCheckpointAndRefusesAnUnknownOne(t *testing.T) {
	t.Setenv("KEEPER_DATA_DIR", t.TempDir())
	t.Setenv("KEEPER_LOG_ORIGIN", "keeper.test/log")
	skey, _, err := evlog.GenerateKey("keeper.test/log")
	require.NoError(t, err)
	keyFile := filepath.Join(t.TempDir(), "log-signer.key")
	require.NoError(t, os.WriteFile(keyFile, []byte(skey), 0o600))
	t.Setenv("KEEPER_LOG_KEY_FILE", keyFile)
	signer, err := evlog.NewSigner(skey, "keeper.test/log")
	require.NoError(t, err)
	growLog(t, signer, 10)
	ctx := context.Background()
	st := storetest.Open(t, filepath.Join(os.Getenv("KEEPER_DATA_DIR"), "keeper.db"))
	const account = "0xaaaa000000000000000000000000000000000001"
	_, err = logsvc.ListAccounts(ctx, st, signer, []logsvc.Account{{Chain: "etherlink", Network: "eip155:128123", Address: account}}, time.Now())
	require.NoError(t, err)
	st.Close()

	_, _, err = keeper(t, "log", "trust", "retire", "0xaaaa")
	require.Error(t, err, "not a CAIP-10 id")
	_, _, err = keeper(t, "log", "trust", "retire", "eip155:128123:0xbbbb000000000000000000000000000000000002")
	require.ErrorContains(t, err, "not an open account")

	out, _, err := keeper(t, "log", "trust", "retire", "eip155:128123:"+account)
	require.NoError(t, err)
	assert.Contains(t, out, "retired eip155:128123:"+account)
	plain, _, err := keeper(t, "log", "trust")
	require.NoError(t, err)
	root, err := trust.Parse([]byte(plain))
	require.NoError(t, err)
	require.Len(t, root.Accounts, 1)
	require.NotNil(t, root.Accounts[0].Sizes.End, "the account's sizes end")
	assert.True(t, root.Retired("eip155:128123", account))
	ok, _ := root.Allows("etherlink", "eip155:128123", account, int64(*root.Accounts[0].Sizes.End))
	assert.False(t, ok)
}
