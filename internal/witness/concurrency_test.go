package witness_test

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/tlogwitness"
	"github.com/keeperhq/keeper/internal/tlogwitness/witnesstest"
)

// cosign is a checkpoint the witness cosigned, with the history that holds it.
// Many requests at once, half of them from two forks that share a prefix
// with the log's history (the log's own key signs all three): whatever
// wins each race, no two checkpoints the witness cosigned are inconsistent.
func TestConcurrentForksAndExtensionsNeverGetTwoInconsistentCheckpointsCosigned(t *testing.T) {
	const top = 600
	log := newMemLog(t, "example.com/log")
	histories := []*memLog{log, log.forkAt(t, 40, "fork a "), log.forkAt(t, 200, "fork b ")}
	for _, h := range histories {
		h.grow(t, top) // read-only from here: safe to share
	}
	w := serve(t, log)

	var (
		known    atomic.Int64 // the largest size the witness answered with
		mu       sync.Mutex
		cosigns  []witnesstest.Cosigned
		refusals atomic.Int64
		failures = make(chan error, 64)
	)
	var wg sync.WaitGroup
	for g := range 16 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range 60 {
				h := histories[rng.IntN(len(histories))]
				old := known.Load()
				n := min(old+rng.Int64N(12), top)
				checkpoint := h.checkpoint(t, n)
				status, body, err := postBody(w.url, tlogwitness.AddCheckpoint{OldSize: uint64(old), Proof: h.proof(t, old, n), Checkpoint: checkpoint}.Marshal())
				switch {
				case err != nil:
					failures <- err
					return
				case status == http.StatusOK:
					mu.Lock()
					cosigns = append(cosigns, witnesstest.Cosigned{History: h, Size: n, Root: h.root(t, n), Note: append(checkpoint, body...)})
					mu.Unlock()
					raise(&known, n)
				case status == http.StatusConflict:
					size, err := tlogwitness.ParseConflict(body)
					if err != nil {
						failures <- err
						return
					}
					raise(&known, int64(size))
				case status == http.StatusUnprocessableEntity:
					refusals.Add(1)
				default:
					failures <- fmt.Errorf("size %d from %d: %d %s", n, old, status, body)
					return
				}
			}
		})
	}
	wg.Wait()
	close(failures)
	for err := range failures {
		require.NoError(t, err)
	}
	t.Logf("%d checkpoints cosigned, %d refused as inconsistent", len(cosigns), refusals.Load())
	require.Greater(t, len(cosigns), 50, "the witness cosigned while the others raced")
	assert.Positive(t, refusals.Load(), "some forks came after the witness took the other side")
	witnesstest.RequireOneHistory(t, log.signer.Key(), w.Key(), cosigns)
}

// raise sets v to n if n is larger.
func raise(v *atomic.Int64, n int64) {
	for {
		cur := v.Load()
		if n <= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

// postBody sends an add-checkpoint body, for goroutines that may not
// fail the test themselves.
func postBody(url string, body []byte) (int, []byte, error) {
	resp, err := http.Post(url+tlogwitness.AddCheckpointPath, "text/plain", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}
