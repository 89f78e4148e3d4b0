package logsvc_test

import (
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/receipts"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/tlogwitness"
)

// fakeWitness is a witness that speaks c2sp.org/tlog-witness over real
// HTTP, deciding each request with tlogwitness.Check over its state in
// memory, for the faults the log must ride out: down (503), or its state
// lost (it answers 409 with size 0).
type fakeWitness struct {
	w    *evlog.Witness
	log  evlog.Key
	srv  *httptest.Server
	down atomic.Bool
	asks atomic.Int64 // requests received

	mu       sync.Mutex
	st       tlogwitness.State
	cosigned []evlog.Checkpoint
}

func newFakeWitness(t *testing.T, name string, log evlog.Key) *fakeWitness {
	t.Helper()
	seed := sha256.Sum256([]byte(name))
	w, err := evlog.NewWitness(name, seed[:])
	require.NoError(t, err)
	f := &fakeWitness{w: w, log: log, st: tlogwitness.State{Root: tlogwitness.EmptyRoot}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeWitness) serve(w http.ResponseWriter, r *http.Request) {
	f.asks.Add(1)
	if f.down.Load() {
		http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
		return
	}
	body, _ := io.ReadAll(r.Body)
	req, err := tlogwitness.ParseAddCheckpoint(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v := tlogwitness.Check(req, func(origin string) (evlog.Key, bool) { return f.log, origin == f.log.Name }, f.st)
	switch v.Status {
	case http.StatusOK:
		f.st = v.Next
		f.cosigned = append(f.cosigned, v.Checkpoint)
		line, err := f.w.Cosign(v.Checkpoint.Body(), time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, line)
	case http.StatusConflict:
		w.Header().Set("Content-Type", tlogwitness.SizeContentType)
		w.WriteHeader(http.StatusConflict)
		_, _ = w.Write(tlogwitness.FormatSize(v.Size))
	default:
		http.Error(w, v.Reason, v.Status)
	}
}

func (f *fakeWitness) forget() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.st = tlogwitness.State{Root: tlogwitness.EmptyRoot}
}

func (f *fakeWitness) witness() logsvc.Witness { return logsvc.Witness{Key: f.w.Key(), URL: f.srv.URL} }

// witnessed is a log with two fake witnesses, listed in its trust root
// with a quorum of 2.
func witnessed(t *testing.T) (*testLog, *logsvc.Witnessing, [2]*fakeWitness) {
	t.Helper()
	l := newTestLog(t)
	ws := [2]*fakeWitness{newFakeWitness(t, "a.example/witness", l.signer.Key()), newFakeWitness(t, "b.example/witness", l.signer.Key())}
	_, err := logsvc.ListWitnesses(context.Background(), l.st, l.signer, []evlog.WitnessKey{ws[0].w.Key(), ws[1].w.Key()}, 2, time.Now())
	require.NoError(t, err)
	return l, &logsvc.Witnessing{Store: l.st, LogKey: l.signer.Key(), Witnesses: []logsvc.Witness{ws[0].witness(), ws[1].witness()},
		Quorum: 2, Interval: 20 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, ws
}

// submitAll offers every witness the log's checkpoint once (twice after
// a 409).
func submitAll(t *testing.T, wg *logsvc.Witnessing) []error {
	t.Helper()
	var errs []error
	for _, w := range wg.Witnesses {
		again, err := wg.Submit(context.Background(), w)
		if again {
			_, err = wg.Submit(context.Background(), w)
		}
		errs = append(errs, err)
	}
	return errs
}

// requireQuorum checks the witnessed checkpoint is of size and that the
// deployment's trust root takes it: the log's signature and both
// cosignatures, as every verifier and the audit check them.
func requireQuorum(t *testing.T, l *testLog, size uint64) store.LogCheckpoint {
	t.Helper()
	c, err := l.st.WitnessedCheckpoint(context.Background())
	require.NoError(t, err)
	require.Equal(t, size, c.Size)
	root, err := l.st.TrustRoot(context.Background())
	require.NoError(t, err)
	_, cosigs, err := root.Root.OpenCheckpoint(c.Note)
	require.NoError(t, err)
	assert.Len(t, cosigs, 2)
	return c
}

func TestEachNewCheckpointIsCosignedByTheQuorumWithAProofFromWhatEachWitnessCosignedLast(t *testing.T) {
	l, wg, ws := witnessed(t)
	ctx := context.Background()

	_, err := l.st.WitnessedCheckpoint(ctx)
	require.ErrorIs(t, err, store.ErrNotFound)
	srv := httptest.NewServer(&logsvc.Server{Source: l.st, Witnessed: true})
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/log/checkpoint")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode, "the root asks for the quorum from size 0: nothing is served before it")

	for _, n := range []int{3, 10, 1, 40} {
		latest := l.grow(t, n)
		assert.Equal(t, []error{nil, nil}, submitAll(t, wg))
		c := requireQuorum(t, l, latest.Size)

		resp, err := http.Get(srv.URL + "/log/checkpoint")
		require.NoError(t, err)
		served, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, string(c.Note), string(served), "/log/checkpoint serves the cosigned checkpoint")
	}
	for _, w := range ws {
		assert.Len(t, w.cosigned, 4, "each witness cosigned each checkpoint once, each proved consistent with the one before")
	}
	assert.Equal(t, []error{nil, nil}, submitAll(t, wg), "nothing new: nothing is sent")
	assert.Len(t, ws[0].cosigned, 4)

	witnessed := requireQuorum(t, l, l.grow(t, 0).Size)
	l.grow(t, 5) // signed, not cosigned yet
	dir := t.TempDir()
	_, err = logsvc.Export(ctx, l.st, dir)
	require.NoError(t, err)
	exported, err := os.ReadFile(filepath.Join(dir, evlog.CheckpointPath))
	require.NoError(t, err)
	assert.Equal(t, string(witnessed.Note), string(exported), "a mirror serves the cosigned checkpoint too")
}

func TestAWitnessDownDelaysOnlyReceiptsAndTheQuorumCatchesUpWhenItReturns(t *testing.T) {
	l, wg, ws := witnessed(t)
	wg.Wake = func() <-chan struct{} { // a checkpoint signed every 10 ms
		c := make(chan struct{})
		time.AfterFunc(10*time.Millisecond, func() { close(c) })
		return c
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		wg.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	first := l.grow(t, 5)
	require.Eventually(t, func() bool {
		c, err := l.st.WitnessedCheckpoint(ctx)
		return err == nil && c.Size == first.Size
	}, 10*time.Second, 10*time.Millisecond)

	ws[1].down.Store(true)
	asked := ws[1].asks.Load()
	var latest store.LogCheckpoint
	for range 5 {
		latest = l.grow(t, 7) // intake and the log go on
	}
	time.Sleep(time.Second)
	assert.LessOrEqual(t, ws[1].asks.Load()-asked, int64(8),
		"a witness that is down is asked again after its backoff (0.25 s, doubling), not at every checkpoint signed")
	require.Eventually(t, func() bool {
		st := wg.Status()
		return !st[1].OK && st[0].OK
	}, 10*time.Second, 10*time.Millisecond, "the witness that is down is reported, the other is not")
	wg.RefreshLag(ctx)
	lag := wg.Lag()
	assert.Equal(t, first.Size, lag.Witnessed)
	assert.Equal(t, latest.Size-first.Size, lag.Entries, "the lag in entries is what receipts wait for")
	assert.Contains(t, wg.Status()[1].Reason, "503")

	ws[1].down.Store(false)
	require.Eventually(t, func() bool {
		c, err := l.st.WitnessedCheckpoint(ctx)
		return err == nil && c.Size == latest.Size
	}, 10*time.Second, 10*time.Millisecond, "the quorum catches up with the newest checkpoint")
	requireQuorum(t, l, latest.Size)
	require.Eventually(t, func() bool { return wg.Status()[1].OK }, 10*time.Second, 10*time.Millisecond)
}

func TestAWitnessThatLostItsStateIsProvedFromTheSizeItAnswers(t *testing.T) {
	l, wg, ws := witnessed(t)
	l.grow(t, 4)
	require.Equal(t, []error{nil, nil}, submitAll(t, wg))
	ws[0].forget()
	latest := l.grow(t, 9)
	require.Equal(t, []error{nil, nil}, submitAll(t, wg), "409 with size 0, then a request from 0")
	requireQuorum(t, l, latest.Size)
}

func TestWitnessesAnsweringAtDifferentPacesMeetAtOneSize(t *testing.T) {
	l, wg, ws := witnessed(t)
	ctx := context.Background()
	ten := l.grow(t, 10)
	_, err := wg.Submit(ctx, ws[0].witness())
	require.NoError(t, err)
	l.grow(t, 10)
	_, err = wg.Submit(ctx, ws[1].witness())
	require.NoError(t, err)
	requireQuorum(t, l, ten.Size) // b cosigned the size a had cosigned, not the newest
}

func TestAReceiptWaitsForTheQuorumAndThenNamesTheNewestWitnessedCheckpoint(t *testing.T) {
	l, wg, _ := witnessed(t)
	ctx := context.Background()
	l.grow(t, 6)
	c, err := l.st.LatestCheckpoint(ctx)
	require.NoError(t, err)
	l.add(t, 1)
	l.anchor(t, c.Size, store.Confirmation{TxRef: "stub-tx-1", Block: 7, BlockTime: time.Now().UTC().Truncate(time.Second)})
	evs, _, err := l.st.ListEvidence(ctx, store.ListFilter{Status: store.StatusConfirmed, Limit: 1})
	require.NoError(t, err)
	require.Len(t, evs, 1)
	ev, err := l.st.GetEvidence(ctx, evs[0].ID)
	require.NoError(t, err)

	_, err = receipts.Of(ctx, l.st, ev)
	require.ErrorIs(t, err, receipts.ErrAwaitingWitnesses)

	latest := l.grow(t, 3)
	require.Equal(t, []error{nil, nil}, submitAll(t, wg))
	r, err := receipts.Of(ctx, l.st, ev)
	require.NoError(t, err)
	root, err := l.st.TrustRoot(ctx)
	require.NoError(t, err)
	head, cosigs, err := root.Root.OpenCheckpoint([]byte(r.Log.Checkpoint))
	require.NoError(t, err, "the receipt's checkpoint carries the quorum")
	assert.Len(t, cosigs, 2)
	assert.Equal(t, latest.Size, head.Size, "the newest witnessed checkpoint, past the anchored one")
	require.NoError(t, r.CheckInclusion(head))
	for _, a := range r.Anchors {
		require.NoError(t, a.CheckConsistency(head))
	}
}

func TestTheSequencerSaysWhenItSignsACheckpointAndOnlyThen(t *testing.T) {
	l := newTestLog(t)
	signed := l.seq.Signed()
	_, err := l.seq.Sync(context.Background())
	require.NoError(t, err)
	select {
	case <-signed:
		t.Fatal("nothing was signed: the log is empty")
	default:
	}
	l.grow(t, 3)
	select {
	case <-signed:
	default:
		t.Fatal("a checkpoint was signed and Signed's channel is still open")
	}
	again := l.seq.Signed()
	l.grow(t, 0)
	select {
	case <-again:
		t.Fatal("no new checkpoint: nothing to say")
	default:
	}
}

func TestWitnessesListedLaterCountFromTheNextCheckpointAndAQuorumIsNeverLowered(t *testing.T) {
	l := newTestLog(t)
	ctx := context.Background()
	latest := l.grow(t, 4)
	w := newFakeWitness(t, "late.example/witness", l.signer.Key())
	tr, err := logsvc.ListWitnesses(ctx, l.st, l.signer, []evlog.WitnessKey{w.w.Key()}, 1, time.Now())
	require.NoError(t, err)
	assert.Equal(t, latest.Size+1, tr.Root.Witnesses.List[0].Sizes.Start)
	assert.Equal(t, 0, tr.Root.Witnesses.QuorumAt(latest.Size), "every checkpoint signed so far keeps verifying without cosignatures")
	assert.Equal(t, 1, tr.Root.Witnesses.QuorumAt(latest.Size+1))

	again, err := logsvc.ListWitnesses(ctx, l.st, l.signer, []evlog.WitnessKey{w.w.Key()}, 1, time.Now())
	require.NoError(t, err)
	assert.Equal(t, tr.Version, again.Version, "a worker restarting with the same witnesses changes nothing")
	_, err = logsvc.ListWitnesses(ctx, l.st, l.signer, []evlog.WitnessKey{w.w.Key()}, 0, time.Now())
	assert.ErrorContains(t, err, "KEEPER_LOG_WITNESS_QUORUM")
	assert.ErrorContains(t, err, "never lowered")
}
