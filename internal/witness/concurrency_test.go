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
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/tlogwitness"
)

// cosign is a checkpoint the witness cosigned, with the history that holds it.
type cosign struct {
	history *memLog
	size    int64
	root    [32]byte
	note    []byte // the checkpoint and the witness's cosignature
}

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
		cosigns  []cosign
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
					cosigns = append(cosigns, cosign{history: h, size: n, root: h.root(t, n), note: append(checkpoint, body...)})
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
	assertConsistent(t, log.signer.Key(), w.Key(), cosigns)
}

// assertConsistent checks every cosignature and that every two checkpoints
// cosigned are of one history: the same root at the same size, and the
// smaller one provably a prefix of the larger.
func assertConsistent(t *testing.T, logKey evlog.Key, witnessKey evlog.WitnessKey, cosigns []cosign) {
	t.Helper()
	for _, c := range cosigns {
		_, sigs, err := evlog.OpenCosigned(c.note, logKey, []evlog.WitnessKey{witnessKey})
		require.NoError(t, err)
		require.Len(t, sigs, 1, "size %d: the witness's cosignature", c.size)
	}
	for i, a := range cosigns {
		for _, b := range cosigns[i+1:] {
			if a.size > b.size {
				a, b = b, a
			}
			if a.size == b.size {
				require.Equal(t, a.root, b.root, "two roots cosigned at size %d", a.size)
				continue
			}
			if a.size == 0 { // the empty tree is a prefix of every tree
				require.Equal(t, tlogwitness.EmptyRoot, a.root, "the empty tree's root")
				continue
			}
			proof, err := tlog.ProveTree(b.size, a.size, b.history)
			require.NoError(t, err)
			require.NoError(t, tlog.CheckTree(proof, b.size, b.root, a.size, a.root), "cosigned sizes %d and %d are not of one history", a.size, b.size)
		}
	}
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
