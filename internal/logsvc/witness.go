package logsvc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/tlogwitness"
)

// Witness is one witness the log submits its checkpoints to
// (c2sp.org/tlog-witness): its cosignature key, whose name is the
// witness's, and the URL prefix its add-checkpoint endpoint is under.
type Witness struct {
	Key evlog.WitnessKey
	URL string
}

// WitnessStore is the store as Witnessing needs it (*store.Store).
type WitnessStore interface {
	LatestCheckpoint(ctx context.Context) (store.LogCheckpoint, error)
	CheckpointAt(ctx context.Context, size uint64) (store.LogCheckpoint, error)
	Consistency(ctx context.Context, m, n uint64) ([][32]byte, error)
	WitnessSize(ctx context.Context, witness string) (uint64, bool, error)
	SetWitnessSize(ctx context.Context, witness string, size uint64) error
	SaveCosignature(ctx context.Context, size uint64, witness, line string) (map[string]string, error)
	MarkWitnessed(ctx context.Context, size uint64, lines []string) error
	NewestCosignedBy(ctx context.Context, witness string, size uint64) (uint64, bool, error)
	WitnessedCheckpoint(ctx context.Context) (store.LogCheckpoint, error)
}

var _ WitnessStore = (*store.Store)(nil)

// Backoff bounds of a witness that fails: the wait doubles from the first
// to the last, with jitter, and is back to none after a success.
const (
	witnessBackoffMin = 250 * time.Millisecond
	witnessBackoffMax = 5 * time.Second
)

// Witnessing submits the log's newest checkpoint to every witness with a
// consistency proof from the size that witness cosigned last, keeps each
// cosignature beside its checkpoint, and marks a checkpoint witnessed once
// Quorum witnesses cosigned it: /log/checkpoint serves that one, and
// receipts name it. A witness that is down, slow or refusing stops nothing
// but its own submissions: it is retried with backoff, and the log, its
// anchors and intake go on.
type Witnessing struct {
	Store     WitnessStore
	LogKey    evlog.Key
	Witnesses []Witness
	Quorum    int
	// Interval is how often each witness is offered the newest checkpoint
	// (the log's checkpoint interval); Wake, when set, offers it sooner: a
	// channel closed when a checkpoint is signed (Sequencer.Signed). A
	// witness that failed waits out its backoff whatever Wake says.
	Interval time.Duration
	Wake     func() <-chan struct{}
	Client   *http.Client
	Logger   *slog.Logger
	// Observe, when set, is told of each submission: the witness, how it
	// ended ("cosigned", "conflict", or why it failed) and, when a
	// checkpoint became witnessed, the time from its signature to its
	// quorum.
	Observe func(witness, outcome string, quorumAfter time.Duration)

	states sync.Map // witness name → *witnessState
	lag    atomic.Pointer[WitnessLag]
}

// witnessState is what this process knows of one witness.
type witnessState struct {
	cosigned atomic.Uint64 // the size this process stored its cosignature of
	err      atomic.Pointer[string]
	since    atomic.Int64 // unix ms of the first failure in a row (0: none)
}

// WitnessLag is how far the witnessed checkpoint trails the newest one.
type WitnessLag struct {
	Entries uint64
	Seconds float64
	// Latest and Witnessed are the sizes of the newest checkpoint and of
	// the newest witnessed one (0 before the first).
	Latest, Witnessed uint64
}

// WitnessStatus is one witness as /readyz and the evidence status report
// it: healthy, or failing since when and why.
type WitnessStatus struct {
	Name   string    `json:"name"`
	OK     bool      `json:"ok"`
	Since  time.Time `json:"since,omitzero"`
	Reason string    `json:"reason,omitempty"`
}

func (w *Witnessing) state(name string) *witnessState {
	s, _ := w.states.LoadOrStore(name, &witnessState{})
	return s.(*witnessState)
}

// Run submits checkpoints to every witness until ctx ends.
func (w *Witnessing) Run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, wit := range w.Witnesses {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.serve(ctx, wit)
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			w.RefreshLag(ctx)
			if !w.wait(ctx, w.Interval, nil) {
				return
			}
		}
	}()
	wg.Wait()
}

// serve offers one witness the newest checkpoint, again and again.
func (w *Witnessing) serve(ctx context.Context, wit Witness) {
	st := w.state(wit.Key.Name)
	var backoff time.Duration
	for {
		// Taken before the submission: a checkpoint signed while it runs
		// ends the wait after it at once.
		signed := w.signed()
		again, err := w.Submit(ctx, wit)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			msg := err.Error()
			if prev := st.err.Swap(&msg); prev == nil {
				st.since.Store(time.Now().UnixMilli())
				w.Logger.Warn("witness: cannot get the checkpoint cosigned; retrying with backoff", "witness", wit.Key.Name, "error", msg)
			}
			backoff = min(max(2*backoff, witnessBackoffMin), witnessBackoffMax)
			if !w.wait(ctx, backoff/2+rand.N(backoff/2+1), nil) {
				return
			}
			continue
		}
		if st.err.Swap(nil) != nil {
			st.since.Store(0)
			w.Logger.Info("witness: cosigning again", "witness", wit.Key.Name)
		}
		backoff = 0
		if again {
			continue
		}
		if !w.wait(ctx, w.Interval, signed) {
			return
		}
	}
}

// signed is Wake's channel, or nil without one.
func (w *Witnessing) signed() <-chan struct{} {
	if w.Wake == nil {
		return nil
	}
	return w.Wake()
}

// wait waits d, or less when signed is closed; false when ctx ended.
func (w *Witnessing) wait(ctx context.Context, d time.Duration, signed <-chan struct{}) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
	case <-signed:
	}
	return true
}

// Submit offers wit the checkpoint it should cosign next, if any: the
// newest size another witness cosigned that has no quorum yet (so the
// quorum meets at one size), else the newest checkpoint. again says to
// submit once more at once (the witness answered with the size it holds).
func (w *Witnessing) Submit(ctx context.Context, wit Witness) (again bool, err error) {
	name := wit.Key.Name
	st := w.state(name)
	latest, err := w.Store.LatestCheckpoint(ctx)
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	have, _, err := w.Store.WitnessSize(ctx, name)
	if err != nil {
		return false, err
	}
	target := latest
	if n, ok, err := w.Store.NewestCosignedBy(ctx, name, have); err != nil {
		return false, err
	} else if ok && n < latest.Size {
		if target, err = w.Store.CheckpointAt(ctx, n); err != nil {
			return false, err
		}
	}
	if target.Size < have || (target.Size == have && st.cosigned.Load() == have) {
		return false, nil // cosigned already (or the witness is ahead of this process)
	}
	var proof [][32]byte
	if have > 0 && have < target.Size {
		if proof, err = w.Store.Consistency(ctx, have, target.Size); err != nil {
			return false, err
		}
	}
	req := tlogwitness.AddCheckpoint{OldSize: have, Proof: proof, Checkpoint: target.Note}
	status, body, err := w.post(ctx, wit, req.Marshal())
	if err != nil {
		w.observe(name, "unreachable", 0)
		return false, fmt.Errorf("witness %s: %w", name, err)
	}
	switch status {
	case http.StatusOK:
		return false, w.cosigned(ctx, wit, target, body)
	case http.StatusConflict:
		size, err := tlogwitness.ParseConflict(body)
		if err != nil {
			w.observe(name, "bad answer", 0)
			return false, fmt.Errorf("witness %s: 409 without its size: %w", name, err)
		}
		w.observe(name, "conflict", 0)
		if err := w.Store.SetWitnessSize(ctx, name, size); err != nil {
			return false, err
		}
		// The witness holds another size than this process thought (another
		// worker got it cosigned, or its state was lost): prove from there.
		return size != have && size <= latest.Size, nil
	}
	w.observe(name, fmt.Sprintf("http %d", status), 0)
	return false, fmt.Errorf("witness %s refused checkpoint %d (from size %d): HTTP %d: %s", name, target.Size, have, status, firstLine(body))
}

// cosigned checks a witness's 200 answer and stores its cosignature, and
// marks the checkpoint witnessed when that makes the quorum.
func (w *Witnessing) cosigned(ctx context.Context, wit Witness, target store.LogCheckpoint, body []byte) error {
	name := wit.Key.Name
	lines, err := tlogwitness.ParseCosignatures(body)
	if err != nil {
		w.observe(name, "bad answer", 0)
		return fmt.Errorf("witness %s: %w", name, err)
	}
	var line string // its line that verifies with its key (a witness may sign with several)
	for _, l := range lines {
		if !strings.HasPrefix(l, "— "+name+" ") {
			continue
		}
		if _, cosigs, err := evlog.OpenCosigned(append(bytes.Clone(target.Note), l...), w.LogKey, []evlog.WitnessKey{wit.Key}); err == nil && len(cosigs) == 1 {
			line = l
			break
		}
	}
	if line == "" {
		w.observe(name, "bad cosignature", 0)
		return fmt.Errorf("witness %s answered 200 with no cosignature of checkpoint %d that verifies with its key", name, target.Size)
	}
	all, err := w.Store.SaveCosignature(ctx, target.Size, name, line)
	if err != nil {
		return err
	}
	if err := w.Store.SetWitnessSize(ctx, name, target.Size); err != nil {
		return err
	}
	w.state(name).cosigned.Store(target.Size)
	var quorum []string
	for _, x := range w.Witnesses {
		if l, ok := all[x.Key.Name]; ok {
			quorum = append(quorum, l)
		}
	}
	if len(quorum) < w.Quorum {
		w.observe(name, "cosigned", 0)
		return nil
	}
	if err := w.Store.MarkWitnessed(ctx, target.Size, quorum); err != nil {
		return err
	}
	w.observe(name, "cosigned", time.Since(target.CreatedAt))
	return nil
}

func (w *Witnessing) observe(witness, outcome string, quorumAfter time.Duration) {
	if w.Observe != nil {
		w.Observe(witness, outcome, quorumAfter)
	}
}

// maxWitnessAnswer bounds what a witness's answer may hold: a few
// cosignature lines.
const maxWitnessAnswer = 64 << 10

func (w *Witnessing) post(ctx context.Context, wit Witness, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimSuffix(wit.URL, "/")+tlogwitness.AddCheckpointPath, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	hc := w.Client
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxWitnessAnswer))
	if err != nil {
		return 0, nil, err
	}
	return resp.StatusCode, b, nil
}

func firstLine(b []byte) string {
	line, _, _ := bytes.Cut(b, []byte("\n"))
	if len(line) > 200 {
		line = line[:200]
	}
	return strings.TrimSpace(string(line))
}

// RefreshLag reads how far the witnessed checkpoint trails the newest.
func (w *Witnessing) RefreshLag(ctx context.Context) {
	latest, err := w.Store.LatestCheckpoint(ctx)
	if err != nil {
		return
	}
	lag := WitnessLag{Latest: latest.Size, Entries: latest.Size}
	witnessed, err := w.Store.WitnessedCheckpoint(ctx)
	switch {
	case err == nil:
		lag.Witnessed, lag.Entries = witnessed.Size, latest.Size-min(latest.Size, witnessed.Size)
		if lag.Entries > 0 {
			// The newest checkpoint waits since the first one signed after
			// the witnessed one; read as the time between the two.
			lag.Seconds = latest.CreatedAt.Sub(witnessed.CreatedAt).Seconds()
		}
	case errors.Is(err, store.ErrNotFound):
		lag.Seconds = time.Since(latest.CreatedAt).Seconds()
	default:
		return
	}
	w.lag.Store(&lag)
}

// Lag is the last lag RefreshLag read.
func (w *Witnessing) Lag() WitnessLag {
	if l := w.lag.Load(); l != nil {
		return *l
	}
	return WitnessLag{}
}

// Status is every witness's state in this process.
func (w *Witnessing) Status() []WitnessStatus {
	out := make([]WitnessStatus, 0, len(w.Witnesses))
	for _, wit := range w.Witnesses {
		st := w.state(wit.Key.Name)
		s := WitnessStatus{Name: wit.Key.Name, OK: true}
		if e := st.err.Load(); e != nil {
			s.OK, s.Reason = false, *e
			if ms := st.since.Load(); ms > 0 {
				s.Since = time.UnixMilli(ms).UTC()
			}
		}
		out = append(out, s)
	}
	return out
}
