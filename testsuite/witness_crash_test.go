//go:build crash

package testsuite

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/tlogwitness"
	"github.com/keeperhq/keeper/internal/tlogwitness/witnesstest"
)

// TestAWitnessKilledAndRestartedNeverCosignsTwoInconsistentCheckpoints runs
// `keeper witness` as a process while a log (a key and a tree in memory)
// asks it, from four goroutines at once, to cosign its growing checkpoints,
// mixing in forks (another root at the size the witness cosigned, and
// longer trees that do not extend it), rollbacks and resubmissions; the
// witness is SIGKILLed and restarted five times. Every cosignature must
// verify, every two checkpoints cosigned must be of one history, and every
// refusal answered must be kept at /refused.
func TestAWitnessKilledAndRestartedNeverCosignsTwoInconsistentCheckpoints(t *testing.T) {
	const restarts, atLeast = 5, 100
	rng := crashRNG(t)
	work := t.TempDir()
	bin := keeperBinary(t)

	keyFile := filepath.Join(work, "witness.key")
	out, err := exec.Command(bin, "witness", "keygen", "--name", "crash.example/witness", "--out", keyFile).Output()
	require.NoError(t, err)
	witnessKey, err := evlog.ParseWitnessKey(lastLine(string(out)))
	require.NoError(t, err, "%s", out)
	skey, vkey, err := evlog.GenerateKey("crash.example/log")
	require.NoError(t, err)
	signer, err := evlog.NewSigner(skey, "crash.example/log")
	require.NoError(t, err)
	trunk := &witnessedHistory{signer: signer}
	trunk.grow(t, 1<<14) // read-only from here: the goroutines share it

	port := freePort(t)
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	w := &proc{name: "witness", log: procLog(t, work, "witness"), env: []string{"KEEPER_LOG_LEVEL=warn"},
		args: []string{"witness", "--addr", fmt.Sprintf("127.0.0.1:%d", port), "--db", filepath.Join(work, "witness.db"), "--key-file", keyFile, "--log", vkey}}
	killAtCleanup(t, w)
	start := time.Now() // the binary is built
	w.start(t, bin)
	waitPort(t, port, time.Minute)

	s := &witnessSubmitter{url: url, trunk: trunk, client: &http.Client{Timeout: 10 * time.Second}}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for g := range 4 {
		r := rand.New(rand.NewPCG(rng.Uint64(), uint64(g)))
		wg.Go(func() { s.run(r, stop) })
	}
	for i := range restarts {
		waitCosigned(t, s, s.count()+15)
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond) // kill at no particular point of a request
		w.kill()
		w.start(t, bin)
		waitPort(t, port, time.Minute)
		t.Logf("restart %d: %d cosigned so far (%v)", i+1, s.count(), time.Since(start))
	}
	waitCosigned(t, s, max(atLeast, s.count()+15))
	close(stop)
	wg.Wait()
	require.NoError(t, s.failure())

	s.mu.Lock()
	defer s.mu.Unlock()
	t.Logf("%d checkpoints cosigned (%d distinct), %d refusals answered, %d answers lost to the kills, in %v from the first start",
		len(s.cosigns), distinctCosigns(s.cosigns), len(s.refusals), s.lost.Load(), time.Since(start).Round(time.Millisecond))
	require.GreaterOrEqual(t, len(s.cosigns), atLeast)
	require.NotEmpty(t, s.refusals, "forks and rollbacks were refused")
	witnesstest.RequireOneHistory(t, signer.Key(), witnessKey, s.cosigns)

	// Every refusal answered was kept, across the kills.
	resp, err := http.Get(url + "/refused")
	require.NoError(t, err)
	defer resp.Body.Close()
	var kept []struct{ Request []byte }
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&kept))
	have := map[string]int{}
	for _, k := range kept {
		have[string(k.Request)]++
	}
	for _, r := range s.refusals {
		require.Positive(t, have[string(r)], "a refusal answered is kept at /refused")
		have[string(r)]--
	}

	// The witness holds at least the largest size it answered a cosignature for.
	largest := int64(0)
	for _, c := range s.cosigns {
		largest = max(largest, c.Size)
	}
	status, body, err := s.post(tlogwitness.AddCheckpoint{Checkpoint: trunk.checkpoint(0)}.Marshal())
	require.NoError(t, err)
	require.Equal(t, http.StatusConflict, status)
	size, err := tlogwitness.ParseConflict(body)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, int64(size), largest)
}

// witnessedHistory is one history of the log: a tree in memory under the
// log's key.
type witnessedHistory struct {
	signer  *evlog.Signer
	entries int64
	hashes  []tlog.Hash
	salt    string
}

func (h *witnessedHistory) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = h.hashes[x]
	}
	return out, nil
}

func (h *witnessedHistory) grow(t *testing.T, n int64) {
	require.NoError(t, h.growTo(n))
}

func (h *witnessedHistory) growTo(n int64) error {
	for ; h.entries < n; h.entries++ {
		hs, err := tlog.StoredHashes(h.entries, []byte(fmt.Sprint(h.salt, "entry ", h.entries)), h)
		if err != nil {
			return err
		}
		h.hashes = append(h.hashes, hs...)
	}
	return nil
}

// forkAt is another history: the first k entries of h, then others.
func (h *witnessedHistory) forkAt(k int64, salt string) *witnessedHistory {
	return &witnessedHistory{signer: h.signer, entries: k, hashes: append([]tlog.Hash(nil), h.hashes[:tlog.StoredHashCount(k)]...), salt: salt}
}

func (h *witnessedHistory) root(n int64) [32]byte {
	r, err := tlog.TreeHash(n, h)
	if err != nil {
		panic(err) // a size the history holds
	}
	return r
}

func (h *witnessedHistory) checkpoint(n int64) []byte {
	signed, err := h.signer.Sign(evlog.Checkpoint{Origin: h.signer.Origin(), Size: uint64(n), Root: h.root(n)})
	if err != nil {
		panic(err)
	}
	return signed
}

// request is an add-checkpoint of the history at size n from old.
func (h *witnessedHistory) request(old, n int64) []byte {
	r := tlogwitness.AddCheckpoint{OldSize: uint64(old), Checkpoint: h.checkpoint(n)}
	if old > 0 && old < n {
		p, err := tlog.ProveTree(n, old, h)
		if err != nil {
			panic(err)
		}
		for _, x := range p {
			r.Proof = append(r.Proof, x)
		}
	}
	return r.Marshal()
}

// witnessSubmitter is the log asking the witness for cosignatures.
type witnessSubmitter struct {
	url      string
	trunk    *witnessedHistory // the log's own history
	client   *http.Client
	known    atomic.Int64 // the size the witness answered with last
	cosigned atomic.Int64 // the largest size it answered a cosignature for
	lost     atomic.Int64 // requests with no answer (the witness was down)

	mu       sync.Mutex
	cosigns  []witnesstest.Cosigned
	refusals [][]byte // the bodies answered 400 or 422
	failed   error
}

func (s *witnessSubmitter) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cosigns)
}

func (s *witnessSubmitter) failure() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

func (s *witnessSubmitter) fail(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed = cmp.Or(s.failed, err)
}

// attempt is one add-checkpoint the log sends.
type attempt struct {
	history *witnessedHistory
	old, n  int64
	refuse  bool   // a fork or a rollback: only a refusal (or a 409) is right
	floor   int64  // the largest size cosigned, answers read before sending
	body    []byte // the request
}

// run submits until stop: extensions of the log's history mostly, and
// forks, rollbacks and resubmissions.
func (s *witnessSubmitter) run(r *rand.Rand, stop <-chan struct{}) {
	top := s.trunk.entries
	for {
		select {
		case <-stop:
			return
		default:
		}
		a := attempt{history: s.trunk, old: s.known.Load(), floor: s.cosigned.Load()}
		a.n = min(a.old+1+r.Int64N(8), top)
		switch x := r.IntN(10); {
		case x < 2 && a.old > 1: // another root at the size cosigned, or a longer tree that does not extend it
			a.history = s.trunk.forkAt(a.old-1, fmt.Sprintf("fork %d ", r.Uint64()))
			a.n, a.refuse = a.old+r.Int64N(3), true
			if err := a.history.growTo(a.n); err != nil {
				s.fail(err)
				return
			}
		case x == 2 && a.old > 1: // a rollback
			a.n, a.refuse = a.old-1-r.Int64N(a.old-1), true
		case x == 3: // the same checkpoint again
			a.n = a.old
		}
		a.body = a.history.request(a.old, a.n)
		status, answer, err := s.post(a.body)
		if err != nil {
			s.lost.Add(1)
			time.Sleep(20 * time.Millisecond) // the witness is restarting
			continue
		}
		if err := s.record(a, status, answer); err != nil {
			s.fail(err)
			return
		}
	}
}

// record takes an answer in: a cosignature, the witness's size, or a
// refusal, each where the test expects it. The witness's size may never be
// below one it answered a cosignature for before the request was sent:
// that would be a cosigned state lost to a kill.
func (s *witnessSubmitter) record(a attempt, status int, answer []byte) error {
	switch {
	case status == http.StatusOK:
		if a.old < a.floor {
			return fmt.Errorf("cosigned size %d from %d after cosigning size %d: the witness lost its state", a.n, a.old, a.floor)
		}
		s.mu.Lock()
		s.cosigns = append(s.cosigns, witnesstest.Cosigned{History: a.history, Size: a.n, Root: a.history.root(a.n),
			Note: append(append([]byte(nil), checkpointOf(a.body)...), answer...)})
		s.mu.Unlock()
		raiseTo(&s.known, a.n)
		raiseTo(&s.cosigned, a.n)
	case status == http.StatusConflict:
		size, err := tlogwitness.ParseConflict(answer)
		if err != nil {
			return err
		}
		if int64(size) < a.floor {
			return fmt.Errorf("the witness answered size %d after cosigning size %d: it lost its state", size, a.floor)
		}
		s.known.Store(int64(size)) // what it has now, even below an answer read before
	case a.refuse && (status == http.StatusUnprocessableEntity || status == http.StatusBadRequest):
		s.mu.Lock()
		s.refusals = append(s.refusals, a.body)
		s.mu.Unlock()
	default:
		return fmt.Errorf("size %d from %d (refusal expected: %v): %d %s", a.n, a.old, a.refuse, status, answer)
	}
	return nil
}

func (s *witnessSubmitter) post(body []byte) (int, []byte, error) {
	resp, err := s.client.Post(s.url+tlogwitness.AddCheckpointPath, "text/plain", bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// checkpointOf is the signed checkpoint of an add-checkpoint body.
func checkpointOf(body []byte) []byte {
	_, c, _ := bytes.Cut(body, []byte("\n\n"))
	return c
}

func waitCosigned(t *testing.T, s *witnessSubmitter, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return s.count() >= n || s.failure() != nil }, 2*time.Minute, 10*time.Millisecond, "%d cosigned", n)
	require.NoError(t, s.failure())
}

// distinctCosigns counts the cosigns of distinct sizes and roots.
func distinctCosigns(cosigns []witnesstest.Cosigned) int {
	seen := map[string]bool{}
	for _, c := range cosigns {
		seen[fmt.Sprint(c.Size, c.Root)] = true
	}
	return len(seen)
}

func raiseTo(v *atomic.Int64, n int64) {
	for {
		cur := v.Load()
		if n <= cur || v.CompareAndSwap(cur, n) {
			return
		}
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
