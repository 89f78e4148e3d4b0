//go:build crash

package testsuite

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/node"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/store/storetest"
)

// TestCrashAndRestartLosesNothing runs keeper as separate processes (Temporal
// server, two workers, the API, the local chains), posts 5,000 evidence at a
// steady rate across both chains while SIGKILLing and restarting a random
// worker, the API or the Temporal server every few seconds, then checks that
// every accepted evidence is confirmed exactly once with a receipt that
// verifies against the chains.
func TestCrashAndRestartLosesNothing(t *testing.T) {
	rng := crashRNG(t)

	work := t.TempDir()
	bin := keeperBinary(t)

	dir := filepath.Join(work, "data")
	tport, apiPort, evmPort, solPort := freePort(t), freePort(t), freePort(t), freePort(t)
	evmURL, solURL := fmt.Sprintf("http://127.0.0.1:%d", evmPort), fmt.Sprintf("http://127.0.0.1:%d", solPort)
	base := append(crashEnv(dir, tport, fmt.Sprintf("127.0.0.1:%d", apiPort)),
		fmt.Sprintf("TEMPORAL_ADDRESS=127.0.0.1:%d", tport), "TEMPORAL_NAMESPACE=default")
	chainsEnv := append([]string{fmt.Sprintf("KEEPER_DEV_EVM_PORT=%d", evmPort), fmt.Sprintf("KEEPER_DEV_SOLANA_PORT=%d", solPort),
		"KEEPER_DEV_EVM_BLOCK_MS=200", "KEEPER_DEV_SOLANA_SLOT_MS=50"}, base...)
	nodeEnv := append([]string{"KEEPER_EVM_RPC_URL=" + evmURL, "KEEPER_SOLANA_RPC_URL=" + solURL}, base...)

	logf := func(name string) *os.File { return procLog(t, work, name) }
	chainsP := &proc{name: "devchains", args: []string{"devchains"}, env: chainsEnv, log: logf("devchains")}
	server := &proc{name: "server", args: []string{"devserver"}, env: base, log: logf("server")}
	api := &proc{name: "api", args: []string{"api"}, env: nodeEnv, log: logf("api")}
	// Each worker serves /health and /readyz on an address of its own.
	w1 := &proc{name: "worker1", args: []string{"worker"}, env: append([]string{fmt.Sprintf("KEEPER_HEALTH_ADDR=127.0.0.1:%d", freePort(t))}, nodeEnv...), log: logf("worker1")}
	w2 := &proc{name: "worker2", args: []string{"worker"}, env: append([]string{fmt.Sprintf("KEEPER_HEALTH_ADDR=127.0.0.1:%d", freePort(t))}, nodeEnv...), log: logf("worker2")}
	killAtCleanup(t, chainsP, server, api, w1, w2)
	chainsP.start(t, bin)
	waitPort(t, evmPort, time.Minute)
	waitPort(t, solPort, time.Minute)
	server.start(t, bin)
	waitPort(t, tport, time.Minute)
	for _, p := range []*proc{api, w1, w2} {
		p.start(t, bin)
	}
	waitPort(t, apiPort, time.Minute)

	// Post 5,000 evidence at a steady rate while the killer works.
	const total = 5000
	rate := 100.0 // per second: 50 s of posting
	hc := &http.Client{Timeout: 5 * time.Second}
	var accepted sync.Map // id -> index
	var refused, posted atomic.Int64
	chainSets := [][]string{{"etherlink"}, {"solana"}, {"etherlink", "solana"}}
	postDone := make(chan struct{})
	go func() {
		defer close(postDone)
		start := time.Now()
		for i := 0; i < total; i++ {
			time.Sleep(time.Until(start.Add(time.Duration(float64(i) / rate * float64(time.Second)))))
			code, id, err := post(hc, fmt.Sprintf("127.0.0.1:%d", apiPort), map[string]any{"digest": digest("crash", i), "chains": chainSets[i%3], "idempotency_key": fmt.Sprintf("crash-%d", i)})
			posted.Add(1)
			if err == nil && code/100 == 2 && id != "" {
				accepted.Store(id, i)
			} else {
				refused.Add(1)
			}
		}
	}()

	kinds := []*proc{w1, w2, api, api, server, server, w1, w2, api, server, w1, server}
	rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
	kills := map[string]int{}
	for _, p := range kinds {
		time.Sleep(time.Duration(2500+rng.IntN(1500)) * time.Millisecond)
		p.kill()
		kills[p.name]++
		time.Sleep(time.Duration(300+rng.IntN(700)) * time.Millisecond)
		p.start(t, bin)
	}
	<-postDone
	t.Logf("kills: %v (%d in all); posted %d, accepted %d, refused %d", kills, len(kinds), posted.Load(), posted.Load()-refused.Load(), refused.Load())

	// Everything accepted must confirm.
	st := storetest.Open(t, node.StoreFile(dir))
	var ids []string
	accepted.Range(func(k, _ any) bool { ids = append(ids, k.(string)); return true })
	require.Greater(t, len(ids), total*8/10, "most posts were accepted")
	deadline := time.Now().Add(5 * time.Minute)
	for {
		c := countByStatus(t, st)
		require.Zero(t, c[store.StatusDeadLetter], "nothing dead-lettered: %v", c)
		if c[store.StatusConfirmed] == sumCounts(c) {
			break
		}
		require.True(t, time.Now().Before(deadline), "not everything confirmed in time: %v", c)
		time.Sleep(time.Second)
	}
	// A request whose answer was lost with a killed API may still have been
	// stored: the client saw an error, and its retry with the same
	// idempotency key gets that evidence back. Nothing else may be stored.
	c := countByStatus(t, st)
	assert.GreaterOrEqual(t, c[store.StatusConfirmed], len(ids))
	assert.LessOrEqual(t, c[store.StatusConfirmed]-len(ids), int(refused.Load()), "only refused requests can account for extra stored evidence")
	extra := c[store.StatusConfirmed] - len(ids)

	res := crashCheck{st: st, dataDir: dir, apiAddr: fmt.Sprintf("127.0.0.1:%d", apiPort), evmURL: evmURL, solURL: solURL}.verifyExactlyOnce(t, ids)
	t.Logf("accepted %d: confirmed %d, duplicated 0, lost 0 (and %d stored whose client saw an error); %d EVM and %d Solana transactions; longest wait %v",
		len(ids), len(ids), extra, res.evmTxs, res.solanaTxs, res.longest.Round(time.Millisecond))
}

func sumCounts(c map[store.Status]int) int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}
