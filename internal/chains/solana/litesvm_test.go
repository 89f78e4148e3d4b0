package solana

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sol "github.com/gagliardetto/solana-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// npmInstall is how CI provides LiteSVM (see .ci/run).
const npmInstall = "npm install --prefix .tools/npm --save-exact litesvm@1.5.0 @solana/kit@8.4.0"

type liteSVMResult struct {
	OK           bool     `json:"ok"`
	Err          any      `json:"err"`
	Logs         []string `json:"logs"`
	ComputeUnits int      `json:"computeUnits"`
}

// liteSVM returns a function that executes a wire transaction in LiteSVM. It
// fails the test under CI=true when node or the npm packages are missing and
// skips it otherwise.
func liteSVM(t *testing.T) func(payer sol.PublicKey, raw []byte) liteSVMResult {
	t.Helper()
	missing := func(why string) {
		t.Helper()
		msg := "LiteSVM check needs " + why + "; install it from the repository root with: " + npmInstall
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node (>= 20) on PATH")
	}
	prefix := os.Getenv("KEEPER_NPM_PREFIX")
	if prefix == "" {
		prefix, err = filepath.Abs(filepath.Join("..", "..", "..", ".tools", "npm"))
		require.NoError(t, err)
	}
	modules := filepath.Join(prefix, "node_modules")
	for _, pkg := range []string{"litesvm", filepath.Join("@solana", "kit")} {
		if _, err := os.Stat(filepath.Join(modules, pkg, "package.json")); err != nil {
			missing("the npm package " + pkg + " in " + modules)
		}
	}
	script, err := filepath.Abs(filepath.Join("testdata", "litesvm_check.mjs"))
	require.NoError(t, err)

	return func(payer sol.PublicKey, raw []byte) liteSVMResult {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, node, script, payer.String())
		cmd.Env = append(os.Environ(), "NODE_PATH="+modules)
		cmd.Stdin = strings.NewReader(base64.StdEncoding.EncodeToString(raw))
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		require.NoError(t, cmd.Run(), "litesvm_check.mjs: %s", stderr.String())
		var res liteSVMResult
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), "litesvm_check.mjs printed %q", stdout.String())
		return res
	}
}

func TestTheRealSolanaRuntimeExecutesTheAnchorTransactionAndLogsTheMemo(t *testing.T) {
	run := liteSVM(t)
	payer := newKey(t)
	root := rootOf("litesvm anchor")
	blockhash := sol.HashFromBytes(bytes.Repeat([]byte{7}, 32))

	for _, fee := range []uint64{0, 5_000} {
		_, raw, err := BuildAnchorTx(payer, Memo(root), blockhash, fee)
		require.NoError(t, err)

		res := run(payer.PublicKey(), raw)

		require.True(t, res.OK, "fee %d: LiteSVM rejected the anchor: %v\n%s", fee, res.Err, strings.Join(res.Logs, "\n"))
		logs := strings.Join(res.Logs, "\n")
		assert.Contains(t, logs, "Program "+MemoProgramID.String()+" success", "fee %d", fee)
		assert.Contains(t, logs, "Program log: Signed by:\nProgram log: "+payer.PublicKey().String(), "fee %d", fee)
		assert.Contains(t, logs, "Program log: Memo (len 74)\nProgram log: "+Memo(root), "fee %d", fee)
		assert.Less(t, res.ComputeUnits, ComputeUnitLimit, "fee %d: the compute unit limit must leave room for the memo", fee)
		t.Logf("priority fee %d: %d compute units", fee, res.ComputeUnits)
	}
}

func TestTheRealSolanaRuntimeRejectsTheSameAnchorWithOneSignatureBitFlipped(t *testing.T) {
	run := liteSVM(t)
	payer := newKey(t)
	_, raw, err := BuildAnchorTx(payer, Memo(rootOf("tampered")), sol.HashFromBytes(bytes.Repeat([]byte{9}, 32)), 5_000)
	require.NoError(t, err)
	require.True(t, run(payer.PublicKey(), raw).OK, "the untouched bytes execute")

	raw[1+10] ^= 0x01 // one bit of the payer's signature (after the signature count)

	res := run(payer.PublicKey(), raw)
	assert.False(t, res.OK, "LiteSVM accepted a transaction with a corrupted signature")
	assert.Equal(t, "SignatureFailure", res.Err)
}
