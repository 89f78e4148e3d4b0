package witness_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/tlogwitness"
	"github.com/keeperhq/keeper/internal/witness"
)

// memLog is a log kept in memory with its key: it signs checkpoints and
// proves consistency as keeper's log does. Grow it before sharing it
// between goroutines: reading is safe, growing is not.
type memLog struct {
	signer  *evlog.Signer
	entries int64
	hashes  []tlog.Hash
	salt    string // tells one history's entries from another's
}

func newMemLog(t testing.TB, origin string) *memLog {
	skey, _, err := evlog.GenerateKey(origin)
	require.NoError(t, err)
	s, err := evlog.NewSigner(skey, origin)
	require.NoError(t, err)
	return &memLog{signer: s}
}

// forkAt is another history under the same key: the first k entries of
// l, then others.
func (l *memLog) forkAt(t testing.TB, k int64, salt string) *memLog {
	l.grow(t, k)
	n := tlog.StoredHashCount(k)
	return &memLog{signer: l.signer, entries: k, hashes: append([]tlog.Hash(nil), l.hashes[:n]...), salt: salt}
}

func (l *memLog) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = l.hashes[x]
	}
	return out, nil
}

// grow appends entries until the log has n.
func (l *memLog) grow(t testing.TB, n int64) {
	for ; l.entries < n; l.entries++ {
		hs, err := tlog.StoredHashes(l.entries, []byte(fmt.Sprint(l.salt, "entry ", l.entries)), l)
		require.NoError(t, err)
		l.hashes = append(l.hashes, hs...)
	}
}

func (l *memLog) root(t testing.TB, n int64) [32]byte {
	l.grow(t, n)
	h, err := tlog.TreeHash(n, l)
	require.NoError(t, err)
	return h
}

// checkpoint is the log's signed checkpoint of size n.
func (l *memLog) checkpoint(t testing.TB, n int64) []byte {
	signed, err := l.signer.Sign(evlog.Checkpoint{Origin: l.signer.Origin(), Size: uint64(n), Root: l.root(t, n)})
	require.NoError(t, err)
	return signed
}

// proof is the consistency proof from old to n (none from 0 or to old).
func (l *memLog) proof(t testing.TB, old, n int64) [][32]byte {
	if old == 0 || old >= n {
		return nil
	}
	l.grow(t, n)
	p, err := tlog.ProveTree(n, old, l)
	require.NoError(t, err)
	out := make([][32]byte, len(p))
	for i, h := range p {
		out[i] = h
	}
	return out
}

// request is the add-checkpoint body of the log at size n, from old.
func (l *memLog) request(t testing.TB, old, n int64) []byte {
	return tlogwitness.AddCheckpoint{OldSize: uint64(old), Proof: l.proof(t, old, n), Checkpoint: l.checkpoint(t, n)}.Marshal()
}

// clock is the witnesses' injected time, which tests move.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// served is a witness served over HTTP on 127.0.0.1.
type served struct {
	*witness.Witness
	url    string
	signer *evlog.Witness
	clock  *clock
	db     string
	stop   func() // stops serving and closes the witness
}

func newSigner(t testing.TB, name string) *evlog.Witness {
	seed := make([]byte, ed25519.SeedSize)
	_, err := rand.Read(seed)
	require.NoError(t, err)
	w, err := evlog.NewWitness(name, seed)
	require.NoError(t, err)
	return w
}

// serve opens a witness of logs with a new key and a new state file and
// serves it until the test ends.
func serve(t testing.TB, logs ...*memLog) *served {
	t.Helper()
	s := &served{signer: newSigner(t, "witness.example/w1"), clock: &clock{t: time.Unix(1_700_000_000, 0)}, db: filepath.Join(t.TempDir(), "witness.db")}
	s.open(t, logs...)
	return s
}

// open opens the witness's state file and serves it until stop or the
// test's end.
func (s *served) open(t testing.TB, logs ...*memLog) {
	t.Helper()
	var keys []evlog.Key
	for _, l := range logs {
		keys = append(keys, l.signer.Key())
	}
	w, err := witness.Open(context.Background(), witness.Config{DB: s.db, Signer: s.signer, Logs: keys, Now: s.clock.Now})
	require.NoError(t, err)
	srv := httptest.NewServer(w.Handler())
	s.Witness, s.url = w, srv.URL
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			srv.Close()
			require.NoError(t, w.Close())
		})
	}
	t.Cleanup(s.stop)
}

// reply is an HTTP answer.
type reply struct {
	status      int
	contentType string
	body        []byte
}

// post sends an add-checkpoint body.
func (s *served) post(t testing.TB, body []byte) reply {
	t.Helper()
	return do(t, http.MethodPost, s.url+tlogwitness.AddCheckpointPath, body)
}

func do(t testing.TB, method, url string, body []byte) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{status: resp.StatusCode, contentType: resp.Header.Get("Content-Type"), body: b}
}

// cosigned is the checkpoint with the witness's answer appended, as a log
// adds the cosignatures it gets.
func cosigned(checkpoint []byte, r reply) []byte {
	return append(append([]byte(nil), checkpoint...), r.body...)
}
