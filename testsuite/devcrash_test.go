//go:build crash

package testsuite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// TestKeeperDevSurvivesSIGKILL runs `keeper dev` (the embedded Temporal
// server, API, worker and both local chains in ONE process), posts 2,000
// evidence on EtherLink and Solana at a steady 40/s with idempotency keys
// (a post that failed during a kill is retried with the same key), SIGKILLs
// the whole process at random moments at least 4 times and restarts it. After
// the last restart every evidence that got a 2xx must be confirmed within 3
// minutes, exactly once, with receipts that verify (see verifyExactlyOnce;
// both local chains keep their ledgers across kills, so every anchor is
// checked on chain). Then `keeper log audit` with the deployment's trust
// root finds nothing, and a receipt issued before the first kill verifies
// on both chains with `keeper verify --trust`.
func TestKeeperDevSurvivesSIGKILL(t *testing.T) {
	rng := crashRNG(t)
	began := time.Now()

	work := t.TempDir()
	bin := keeperBinary(t)
	dir := filepath.Join(work, "data")
	tport, apiPort, evmPort, solPort := freePort(t), freePort(t), freePort(t), freePort(t)
	apiAddr := fmt.Sprintf("127.0.0.1:%d", apiPort)
	dev := &proc{name: "keeper-dev", args: []string{"dev"}, log: procLog(t, work, "keeper-dev"), env: append(crashEnv(dir, tport, apiAddr),
		fmt.Sprintf("KEEPER_DEV_EVM_PORT=%d", evmPort), fmt.Sprintf("KEEPER_DEV_SOLANA_PORT=%d", solPort),
		"KEEPER_DEV_EVM_BLOCK_MS=200", "KEEPER_DEV_SOLANA_SLOT_MS=50")}
	killAtCleanup(t, dev)
	dev.start(t, bin)
	waitPort(t, apiPort, 2*time.Minute)

	// 2,000 evidence at 40/s (50 s); each retried with its key until a 2xx.
	const total, rate = 2000, 40.0
	hc := &http.Client{Timeout: 5 * time.Second}
	var mu sync.Mutex
	accepted := map[string]int{} // id -> index
	retries := 0
	chainSets := [][]string{{"etherlink"}, {"solana"}, {"etherlink", "solana"}}
	var posts sync.WaitGroup
	postDone := make(chan struct{})
	go func() {
		defer close(postDone)
		start := time.Now()
		for i := range total {
			time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
			posts.Add(1)
			go func() {
				defer posts.Done()
				body := map[string]any{"digest": digest("devcrash", i), "chains": chainSets[i%3], "idempotency_key": fmt.Sprintf("devcrash-%d", i)}
				for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(300 * time.Millisecond) {
					code, id, err := post(hc, apiAddr, body)
					if err == nil && code/100 == 2 && id != "" {
						mu.Lock()
						accepted[id] = i
						mu.Unlock()
						return
					}
					mu.Lock()
					retries++
					mu.Unlock()
				}
			}()
		}
		posts.Wait()
	}()

	// A receipt issued before the first kill, on both chains: it must still
	// verify after every restart (both local chains keep their ledgers).
	early := func() string {
		for deadline := time.Now().Add(90 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			mu.Lock()
			for id, i := range accepted {
				if i%3 == 2 {
					mu.Unlock()
					return id
				}
			}
			mu.Unlock()
		}
		require.FailNow(t, "no evidence on both chains accepted within 90 s")
		return ""
	}()
	earlyReceipt := waitReceiptJSON(t, apiAddr, early, 2*time.Minute)

	// SIGKILL the whole process at random moments while the evidence flow.
	const kills = 5
	var lastRestart time.Time
	for range kills {
		time.Sleep(time.Duration(6000+rng.IntN(4000)) * time.Millisecond)
		dev.kill()
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		dev.start(t, bin)
		lastRestart = time.Now()
	}
	<-postDone
	mu.Lock()
	ids := make([]string, 0, len(accepted))
	for id := range accepted {
		ids = append(ids, id)
	}
	mu.Unlock()
	require.Len(t, ids, total, "every evidence got a 2xx (retried with its idempotency key), one id per key")

	// After the last restart everything accepted confirms within 3 minutes.
	st := storetest.Open(t, node.StoreFile(dir))
	deadline := lastRestart.Add(3 * time.Minute)
	for {
		c := countByStatus(t, st)
		require.Zero(t, c[store.StatusDeadLetter], "nothing dead-lettered: %v", c)
		if c[store.StatusConfirmed] == sumCounts(c) {
			break
		}
		if time.Now().After(deadline) {
			waiting := unconfirmedByChain(t, st, ids)
			require.Failf(t, "not everything confirmed within 3 minutes of the last restart",
				"evidence by status %v; unconfirmed anchors by chain %v. An EtherLink-only stall is the signer's nonce gap: "+
					"a transaction the local chain lost with its mempool in a kill is not rebroadcast, and the later nonces wait behind it", c, waiting)
		}
		time.Sleep(time.Second)
	}
	require.Equal(t, total, sumCounts(countByStatus(t, st)), "one evidence per idempotency key")

	res := crashCheck{st: st, dataDir: dir, apiAddr: apiAddr, evmURL: fmt.Sprintf("http://127.0.0.1:%d", evmPort),
		solURL: fmt.Sprintf("http://127.0.0.1:%d", solPort)}.verifyExactlyOnce(t, ids)
	evmURL, solURL := fmt.Sprintf("http://127.0.0.1:%d", evmPort), fmt.Sprintf("http://127.0.0.1:%d", solPort)

	// The deployment's trust root, pinned as a verifier would: the audit
	// finds nothing across the restarts, and the receipt issued before the
	// first kill verifies on both chains.
	trustFile := filepath.Join(work, "trust")
	require.NoError(t, os.WriteFile(trustFile, getBody(t, "http://"+apiAddr+"/log/trust"), 0o644))
	audit := exec.Command(bin, "log", "audit", "--log", "http://"+apiAddr+"/log", "--trust", trustFile,
		"--rpc", "etherlink="+evmURL, "--rpc", "solana="+solURL)
	out, err := audit.CombinedOutput()
	require.NoError(t, err, "keeper log audit --trust after %d kills:\n%s", kills, out)
	assert.NotContains(t, string(out), "FINDING")
	receiptFile := filepath.Join(work, early+".receipt.json") // the name the API gives a downloaded receipt: no file beside it
	require.NoError(t, os.WriteFile(receiptFile, earlyReceipt, 0o644))
	check := exec.Command(bin, "verify", receiptFile, "--trust", trustFile, "--rpc", "etherlink="+evmURL, "--rpc", "solana="+solURL)
	out, err = check.CombinedOutput()
	require.NoError(t, err, "the receipt issued before the first kill:\n%s", out)
	assert.Contains(t, string(out), "verified on 2 network(s)", "both local chains' anchors verify")
	t.Logf("kills %d; posted %d (%d retries of a failed post); confirmed %d; %d EtherLink and %d Solana anchor transactions; longest wait %v; all confirmed %v after the last restart; run %v",
		kills, total, retries, len(ids), res.evmTxs, res.solanaTxs, res.longest.Round(time.Millisecond),
		time.Since(lastRestart).Round(time.Second), time.Since(began).Round(time.Second))
}

// unconfirmedByChain counts the anchors of ids not confirmed yet, per chain.
func unconfirmedByChain(t *testing.T, st *store.Store, ids []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, id := range ids {
		ev, err := st.GetEvidence(context.Background(), id)
		require.NoError(t, err)
		for _, a := range ev.Anchors {
			if a.Status != store.StatusConfirmed {
				out[a.Chain]++
			}
		}
	}
	return out
}

// waitReceiptJSON polls GET /v1/evidence/{id}/receipt until the evidence is
// confirmed and returns the receipt as served.
func waitReceiptJSON(t *testing.T, apiAddr, id string, within time.Duration) []byte {
	t.Helper()
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		resp, err := http.Get("http://" + apiAddr + "/v1/evidence/" + id + "/receipt")
		if err != nil {
			continue
		}
		raw, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			return raw
		}
	}
	require.FailNow(t, "no receipt", "evidence %s not confirmed within %v", id, within)
	return nil
}

// getBody GETs url and returns its body, requiring 200.
func getBody(t *testing.T, url string) []byte {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s: %s", url, raw)
	return raw
}
