package main

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runMain, set in a test binary's environment, makes it run keeperd's main
// with its arguments instead of the tests: the tests below see the
// production binary's output and exit status without building it again.
const runMain = "KEEPERD_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMain) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// The production binary keeps every command an operator or a client runs,
// and none of the dev stack's, which need what it does not link.
func TestTheProductionBinaryHasTheServingAndClientCommandsOnly(t *testing.T) {
	var names []string
	for _, c := range root().Commands() {
		names = append(names, c.Name())
	}
	for _, want := range []string{"worker", "api", "witness", "verify", "submit", "status", "receipt", "redrive", "backfill", "config", "healthcheck", "log"} {
		assert.Contains(t, names, want)
	}
	for _, dev := range []string{"dev", "devserver", "devchains", "bench"} {
		assert.NotContains(t, names, dev)
	}
}

// An API that cannot listen does not linger without serving: it exits 1
// with one line that names the setting, the address and the cause, so a
// supervisor restarts it and its log says why (docs/production.md,
// Restarts).
func TestAnAPIWhosePortIsTakenExitsNonZeroWithOneLineNamingTheAddress(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer taken.Close()
	addr := taken.Addr().String()

	dir := t.TempDir()
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(t, err)
	nums := make([]int, len(key))
	for i, b := range key {
		nums[i] = int(b)
	}
	raw, err := json.Marshal(nums)
	require.NoError(t, err)
	keyFile := filepath.Join(dir, "solana-payer.json")
	require.NoError(t, os.WriteFile(keyFile, raw, 0o600))

	cmd := exec.Command(os.Args[0], "api")
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "KEEPER_") && !strings.HasPrefix(kv, "TEMPORAL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, runMain+"=1",
		"KEEPER_HTTP_ADDR="+addr, "KEEPER_DATA_DIR="+filepath.Join(dir, "data"),
		// A chain the production binary has, on an endpoint it does not
		// need before it listens (a custom cluster is not checked at start).
		"KEEPER_CHAINS=solana", "KEEPER_SOLANA_KEY_FILE="+keyFile, "KEEPER_SOLANA_RPC_URL=http://127.0.0.1:1",
		// The Temporal client connects lazily: no server is needed either.
		"TEMPORAL_ADDRESS=127.0.0.1:1", "TEMPORAL_CONFIG_FILE="+filepath.Join(dir, "no-temporal.toml"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()

	var exit *exec.ExitError
	require.True(t, errors.As(err, &exit), "keeper api exits with a status: %v\n%s", err, stderr.String())
	assert.Equal(t, 1, exit.ExitCode())
	assert.Equal(t, "keeper: KEEPER_HTTP_ADDR: cannot listen on "+addr+": bind: address already in use\n", stderr.String())
	assert.Empty(t, stdout.String())
}
