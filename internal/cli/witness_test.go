package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/cli"
	"github.com/keeperhq/keeper/internal/tlogwitness"
)

// witnessKey runs `keeper witness keygen` into a new file and returns the
// file and the verifier key it printed.
func witnessKey(t *testing.T, name string) (file, vkey string) {
	t.Helper()
	file = filepath.Join(t.TempDir(), "secrets", "witness.key")
	out, _, err := keeper(t, "witness", "keygen", "--name", name, "--out", file)
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^(` + regexp.QuoteMeta(name) + `\+\S+)$`).FindStringSubmatch(out)
	require.NotNil(t, m, out)
	return file, m[1]
}

func TestWitnessKeygenWritesAKeyOnceThatReadsBackAndPrintsItsVerifierKey(t *testing.T) {
	for range 8 { // about half of all keys once failed to read back
		file, vkey := witnessKey(t, "witness.example.org/keeper")
		fi, err := os.Stat(file)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
		skey, err := os.ReadFile(file)
		require.NoError(t, err)
		w, err := evlog.ParseWitnessSigner(string(skey))
		require.NoError(t, err, "the key written reads back")
		assert.Equal(t, w.Key().Text, vkey, "the verifier key printed is the key's")

		out, _, err := keeper(t, "witness", "keygen", "--name", "witness.example.org/keeper", "--out", file)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "already exists")
		assert.NotContains(t, out, "PRIVATE")
		again, err := os.ReadFile(file)
		require.NoError(t, err)
		assert.Equal(t, skey, again, "the key is kept")
	}
}

func TestWitnessRefusesBadInputWithOneLine(t *testing.T) {
	keyFile, _ := witnessKey(t, "witness.example.org/keeper")
	_, logVKey, err := evlog.GenerateKey("example.com/log")
	require.NoError(t, err)
	garbage := filepath.Join(t.TempDir(), "garbage.key")
	require.NoError(t, os.WriteFile(garbage, []byte("PRIVATE+KEY+not+a+secret+at-all"), 0o600))
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	db := filepath.Join(t.TempDir(), "witness.db")
	for _, c := range []struct {
		args []string
		msg  string
	}{
		{[]string{"witness", "--db", db, "--log", logVKey}, "--key-file: no witness key"},
		{[]string{"witness", "--db", db, "--log", logVKey, "--key-file", filepath.Join(t.TempDir(), "none")}, "--key-file: open"},
		{[]string{"witness", "--db", db, "--log", logVKey, "--key-file", garbage}, "not a witness signer key"},
		{[]string{"witness", "--db", db, "--key-file", keyFile}, "--log: no log to witness"},
		{[]string{"witness", "--db", db, "--key-file", keyFile, "--log", "nonsense"}, "--log: evlog: log key"},
		{[]string{"witness", "--db", db, "--key-file", keyFile, "--log", logVKey + "," + logVKey}, "listed twice"},
		{[]string{"witness", "--db", db, "--key-file", keyFile, "--log", logVKey, "--addr", taken.Addr().String()},
			"KEEPER_WITNESS_ADDR: cannot listen on " + taken.Addr().String() + ": bind: address already in use"},
		{[]string{"witness", "keygen", "--out", filepath.Join(t.TempDir(), "k")}, "--name: the witness needs a name"},
		{[]string{"witness", "keygen", "--name", "a b", "--out", filepath.Join(t.TempDir(), "k")}, `--name "a b"`},
	} {
		out, errOut, err := keeper(t, c.args...)
		require.Error(t, err, c.args)
		assert.Contains(t, err.Error(), c.msg, c.args)
		assert.NotContains(t, err.Error(), "\n", c.args)
		assert.NotContains(t, out+errOut+err.Error(), "at-all", "%v: the key file's content is never echoed", c.args)
	}
}

// syncBuffer is a buffer the command writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestKeeperWitnessCosignsTheLogsItIsGivenAndStopsOnCancel(t *testing.T) {
	keyFile, vkey := witnessKey(t, "witness.example.org/keeper")
	logSKey, logVKey, err := evlog.GenerateKey("example.com/log")
	require.NoError(t, err)
	signer, err := evlog.NewSigner(logSKey, "example.com/log")
	require.NoError(t, err)
	t.Setenv("KEEPER_WITNESS_KEY_FILE", keyFile)
	t.Setenv("KEEPER_WITNESS_LOGS", logVKey)
	t.Setenv("KEEPER_WITNESS_DB", filepath.Join(t.TempDir(), "state", "witness.db"))

	root := cli.Root(nil)
	var out, errOut syncBuffer
	root.SetArgs([]string{"witness", "--addr", "127.0.0.1:0"})
	root.SetOut(&out)
	root.SetErr(&errOut)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()

	var started struct{ Addr, Key string }
	require.Eventually(t, func() bool {
		line, _, _ := strings.Cut(errOut.String(), "\n")
		return json.Unmarshal([]byte(line), &started) == nil && started.Addr != ""
	}, 10*time.Second, 10*time.Millisecond, "the witness logs where it listens")
	assert.Equal(t, vkey, started.Key, "it logs its verifier key")

	checkpoint, err := signer.Sign(evlog.Checkpoint{Origin: "example.com/log", Size: 0, Root: tlogwitness.EmptyRoot})
	require.NoError(t, err)
	resp, err := http.Post("http://"+started.Addr+tlogwitness.AddCheckpointPath, "text/plain", bytes.NewReader(tlogwitness.AddCheckpoint{Checkpoint: checkpoint}.Marshal()))
	require.NoError(t, err)
	var body bytes.Buffer
	_, err = body.ReadFrom(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, body.String())
	w, err := evlog.ParseWitnessKey(vkey)
	require.NoError(t, err)
	_, cosigs, err := evlog.OpenCosigned(append(checkpoint, body.Bytes()...), signer.Key(), []evlog.WitnessKey{w})
	require.NoError(t, err)
	assert.Len(t, cosigs, 1)

	metrics, err := http.Get("http://" + started.Addr + "/metrics")
	require.NoError(t, err)
	metrics.Body.Close()
	assert.Equal(t, http.StatusOK, metrics.StatusCode)

	cancel()
	select {
	case err := <-done:
		require.NoError(t, err, "a canceled witness stops cleanly")
	case <-time.After(15 * time.Second):
		t.Fatal("the witness did not stop")
	}
	assert.NotContains(t, out.String()+errOut.String(), "PRIVATE", "the private key is never printed")
}
