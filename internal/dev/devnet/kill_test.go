package devnet

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gagliardetto/solana-go"
	"github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const killChildDirEnv = "DEVNET_KILL_CHILD_DIR"

// TestDevnetKillChild is not a test of its own: it is the process
// TestALedgerSurvivesSIGKILL starts and kills.
func TestDevnetKillChild(t *testing.T) {
	dir := os.Getenv(killChildDirEnv)
	if dir == "" {
		t.Skip("runs only as the child of TestALedgerSurvivesSIGKILL")
	}
	d, err := Start(context.Background(), Options{Dir: dir, SlotTime: testSlotTime})
	require.NoError(t, err)
	fmt.Printf("READY %s\n", d.URL())
	select {} // until killed
}

func TestALedgerSurvivesSIGKILL(t *testing.T) {
	dir := t.TempDir()
	child := exec.Command(os.Args[0], "-test.run=^TestDevnetKillChild$", "-test.count=1")
	child.Env = append(os.Environ(), killChildDirEnv+"="+dir)
	out, err := child.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, child.Start())
	killed := false
	defer func() {
		if !killed {
			_ = child.Process.Kill()
			_ = child.Wait()
		}
	}()
	lines := bufio.NewScanner(out)
	url := ""
	for lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "READY "); ok {
			url = u
			break
		}
	}
	require.NotEmpty(t, url, "the child devnet did not start")

	ctx := context.Background()
	c := rpc.New(url)
	payer, err := readKeyFile(filepath.Join(dir, PayerKeyFileName))
	require.NoError(t, err)
	bh, _ := blockhash(t, c, rpc.CommitmentFinalized)
	sig, err := c.SendTransaction(ctx, signed(t, bh, []solana.PrivateKey{payer}, memoIx("keeper:v3 before the kill", solana.Meta(payer.PublicKey()).SIGNER())))
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		st, err := c.GetSignatureStatuses(ctx, false, sig)
		return err == nil && st.Value[0] != nil && st.Value[0].ConfirmationStatus != rpc.ConfirmationStatusProcessed
	}, 20*time.Second, testSlotTime)
	before := lookUp(t, c, sig)

	require.NoError(t, child.Process.Kill()) // SIGKILL, in the middle of slot production
	_ = child.Wait()
	killed = true

	_, c2 := startOn(t, dir, nil)
	assert.Equal(t, before, lookUp(t, c2, sig), "the same slot, blockhash and block time after the kill")
	_, err = c2.GetTransaction(ctx, sig, nil)
	assert.NoError(t, err, "final")
}
