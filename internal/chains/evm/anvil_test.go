package evm_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/internal/dev/chaintest"
	"github.com/keeperhq/keeper/internal/dev/testkit"
	"github.com/keeperhq/keeper/receipt/verify"
)

// AnvilVersion is the anvil release the tests run against (npm package
// @foundry-rs/anvil-linux-amd64, installed by .ci/run).
const AnvilVersion = "1.7.1"

// anvilKey0 is anvil's first well-known dev account (public test key).
const anvilKey0 = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

// anvilBinary finds anvil: $KEEPER_ANVIL_BIN, else the npm install under
// <repo>/.tools/npm. Missing, the test fails on CI (CI=true) and skips elsewhere.
func anvilBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KEEPER_ANVIL_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("KEEPER_ANVIL_BIN=%s: %v", p, err)
		}
		return p
	}
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	p := filepath.Join(root, ".tools", "npm", "node_modules", "@foundry-rs", "anvil-linux-amd64", "bin", "anvil")
	if _, err := os.Stat(p); err == nil {
		return p
	}
	msg := fmt.Sprintf("anvil not found at %s and KEEPER_ANVIL_BIN is unset; install it with:\n"+
		"  npm install --prefix %s --save-exact --no-audit --no-fund @foundry-rs/anvil-linux-amd64@%s",
		p, filepath.Join(root, ".tools", "npm"), AnvilVersion)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// startAnvil runs anvil on a free port with EtherLink's chain id and a block
// a second. --slots-in-an-epoch 1 makes anvil's `finalized` block trail the
// head by 2 blocks instead of 64, so VerifyTx can see finality within the test.
func startAnvil(t *testing.T) string {
	t.Helper()
	url, _ := runAnvil(t, testkit.FreePort(t), "--block-time", "1", "--slots-in-an-epoch", "1")
	return url
}

// runAnvil runs anvil on port with EtherLink's chain id and extra flags until
// the test ends or stop is called, and waits until it answers JSON-RPC.
func runAnvil(t *testing.T, port int, extra ...string) (url string, stop func()) {
	t.Helper()
	bin := anvilBinary(t)
	out := &testkit.SyncBuffer{}
	args := append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--chain-id", "42793"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
		})
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("anvil on port %d output:\n%s", port, out.String())
		}
	})

	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	require.Eventually(t, func() bool {
		select {
		case <-done:
			t.Fatalf("anvil exited:\n%s", out.String())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		v, err := verify.EVM(ctx, url, common.Hash{}.Hex())
		return err == nil && !v.Found
	}, 15*time.Second, 50*time.Millisecond, "anvil did not answer JSON-RPC")
	return url, stop
}

func TestAnAnchorOnAnvilBecomesFinalAndVerifies(t *testing.T) {
	url := startAnvil(t)
	keyFile := filepath.Join(t.TempDir(), "anvil.key")
	require.NoError(t, writeFile(keyFile, anvilKey0+"\n"))
	key, err := evm.LoadKey(keyFile)
	require.NoError(t, err)

	a, err := evm.New(context.Background(), evm.Config{
		RPCURL:        url,
		Key:           key,
		ChainID:       42793,
		Confirmations: 2, // Confirmations mode against a third-party node
		PollInterval:  100 * time.Millisecond,
	})
	require.NoError(t, err)
	t.Cleanup(a.Close)
	require.NoError(t, a.Ping(context.Background()))

	ctx := context.Background()
	j := chaintest.NewJournal()
	root := randomRoot(t)
	ref, err := a.Submit(ctx, chains.Anchor{BatchID: 1, Root: root}, j)
	require.NoError(t, err)
	again, err := a.Submit(ctx, chains.Anchor{BatchID: 1, Root: root}, j)
	require.NoError(t, err, "anvil's answer to a rebroadcast of a pooled transaction is accepted")
	assert.Equal(t, ref, again)

	st := waitState(t, a, j, 1, chains.Final, 20*time.Second)
	assert.Equal(t, ref, st.Ref)
	assert.NotZero(t, st.Block)
	assert.Len(t, j.Records(1), 1)

	var v verify.Tx
	require.Eventually(t, func() bool {
		v, err = verify.EVM(ctx, url, ref)
		require.NoError(t, err)
		return v.Final
	}, 15*time.Second, 100*time.Millisecond, "anvil's finalized block reaches the anchor")
	assert.True(t, v.Found)
	assert.True(t, v.Succeeded)
	assert.Equal(t, root, v.Root)
	assert.Equal(t, st.Block, v.Block)

	missing, err := verify.EVM(ctx, url, common.Hash(randomRoot(t)).Hex())
	require.NoError(t, err)
	assert.False(t, missing.Found)
}
