package witness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/tlogwitness"
)

// Config is what a witness needs.
type Config struct {
	DB     string           // SQLite file path of the witness's durable state
	Signer *evlog.Witness   // its cosignature key
	Logs   []evlog.Key      // the logs it witnesses (origin = key name)
	Logger *slog.Logger     // nil: discard
	Now    func() time.Time // nil: time.Now
}

// Witness cosigns the checkpoints of its logs that extend what it
// cosigned before. Its methods are safe for concurrent use.
type Witness struct {
	signer  *evlog.Witness
	logs    map[string]evlog.Key
	store   *store
	log     *slog.Logger
	now     func() time.Time
	metrics *metrics

	// decide serializes reading a log's state, checking a request against
	// it and recording the new one: two requests never both extend the
	// same state. The store's compare-and-swap holds it against another
	// process on the same file too.
	decide sync.Mutex
}

// Open opens (creating it if need be) the witness's state in c.DB and
// gives each log in c.Logs that has none the initial state, size 0.
func Open(ctx context.Context, c Config) (*Witness, error) {
	if c.Signer == nil {
		return nil, errors.New("witness: no cosignature key")
	}
	if c.DB == "" {
		return nil, errors.New("witness: no state file")
	}
	logs := map[string]evlog.Key{}
	for _, k := range c.Logs {
		if k.Name == "" {
			return nil, errors.New("witness: a log key without a name (read keys with evlog.ParseKey)")
		}
		if _, dup := logs[k.Name]; dup {
			return nil, fmt.Errorf("witness: log %q is listed twice: one key per origin", k.Name)
		}
		logs[k.Name] = k
	}
	w := &Witness{signer: c.Signer, logs: logs, log: c.Logger, now: c.Now, metrics: newMetrics()}
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if w.now == nil {
		w.now = time.Now
	}
	st, err := openStore(ctx, c.DB)
	if err != nil {
		return nil, err
	}
	w.store = st
	if err := st.ensure(ctx, slices.Sorted(maps.Keys(logs)), w.now()); err != nil {
		st.close()
		return nil, err
	}
	sizes, err := st.sizes(ctx)
	if err != nil {
		st.close()
		return nil, err
	}
	for origin := range logs {
		w.metrics.cosigned(origin, sizes[origin])
	}
	return w, nil
}

// Close closes the witness's state file. Stop serving Handler first.
func (w *Witness) Close() error { return w.store.close() }

// Key is the witness's verifier key, as the logs list it.
func (w *Witness) Key() evlog.WitnessKey { return w.signer.Key() }

// answer is an add-checkpoint's HTTP answer.
type answer struct {
	status      int
	contentType string
	body        []byte
}

func textAnswer(status int, reason string) answer {
	return answer{status: status, contentType: "text/plain; charset=utf-8", body: []byte(oneLine(reason) + "\n")}
}

// addCheckpoint answers an add-checkpoint request body.
func (w *Witness) addCheckpoint(ctx context.Context, body []byte) answer {
	req, err := tlogwitness.ParseAddCheckpoint(body)
	if err != nil {
		return textAnswer(http.StatusBadRequest, err.Error())
	}
	v, err := w.check(ctx, req)
	if err != nil {
		w.log.Error("add-checkpoint", "error", err)
		return textAnswer(http.StatusInternalServerError, "the witness could not read or record its state")
	}
	switch v.Status {
	case http.StatusOK:
		return w.cosign(req, v)
	case http.StatusConflict:
		w.log.Debug("add-checkpoint: another old size", "origin", v.Checkpoint.Origin, "reason", v.Reason)
		return answer{status: v.Status, contentType: tlogwitness.SizeContentType, body: tlogwitness.FormatSize(v.Size)}
	}
	if v.Checkpoint.Origin != "" { // the log's key signed what is refused: keep it
		w.keep(ctx, v, body)
	} else {
		w.log.Debug("add-checkpoint refused", "status", v.Status, "reason", v.Reason)
	}
	return textAnswer(v.Status, v.Reason)
}

// check decides req against its log's state and, when it is to be
// cosigned, records the new state first.
func (w *Witness) check(ctx context.Context, req tlogwitness.AddCheckpoint) (tlogwitness.Verdict, error) {
	w.decide.Lock()
	defer w.decide.Unlock()
	origin, _, _ := strings.Cut(string(req.Checkpoint), "\n")
	st := tlogwitness.State{Root: tlogwitness.EmptyRoot} // what Check answers 404 for needs none
	if _, ok := w.logs[origin]; ok {
		var err error
		if st, err = w.store.state(ctx, origin); err != nil {
			return tlogwitness.Verdict{}, err
		}
	}
	v := tlogwitness.Check(req, w.keyOf, st)
	if v.Status != http.StatusOK {
		return v, nil
	}
	if v.Next.Size > math.MaxInt64 {
		v.Status, v.Reason = http.StatusBadRequest, fmt.Sprintf("size %d is beyond 2^63-1, the largest this witness records", v.Next.Size)
		return v, nil
	}
	ok, err := w.store.advance(ctx, origin, st, v.Next, req.Checkpoint, w.now())
	if err != nil {
		return tlogwitness.Verdict{}, err
	}
	if !ok {
		return tlogwitness.Verdict{}, fmt.Errorf("the state of %q changed under the request: another process writes the witness's file", origin)
	}
	w.metrics.cosigned(origin, v.Next.Size)
	return v, nil
}

func (w *Witness) keyOf(origin string) (evlog.Key, bool) {
	k, ok := w.logs[origin]
	return k, ok
}

// cosign answers a checkpoint whose state is recorded with the witness's
// cosignature of its note text, extension lines included
// (c2sp.org/tlog-cosignature).
func (w *Witness) cosign(req tlogwitness.AddCheckpoint, v tlogwitness.Verdict) answer {
	text := req.Checkpoint[:bytes.Index(req.Checkpoint, []byte("\n\n"))+1] // the note opened: it has its blank line
	line, err := w.signer.Cosign(string(text), w.now())
	if err != nil {
		w.log.Error("add-checkpoint: cosign", "origin", v.Checkpoint.Origin, "size", v.Next.Size, "error", err)
		return textAnswer(http.StatusInternalServerError, "the witness could not cosign")
	}
	w.log.Debug("cosigned", "origin", v.Checkpoint.Origin, "size", v.Next.Size)
	return answer{status: http.StatusOK, contentType: "text/plain; charset=utf-8", body: []byte(line)}
}

// keep records a refused request the log's key signed, as evidence.
func (w *Witness) keep(ctx context.Context, v tlogwitness.Verdict, body []byte) {
	w.log.Warn("add-checkpoint refused: the log's key signed it (kept at /refused)",
		"origin", v.Checkpoint.Origin, "size", v.Checkpoint.Size, "status", v.Status, "reason", v.Reason)
	err := w.store.keep(ctx, Refusal{Time: w.now(), Origin: v.Checkpoint.Origin, Status: v.Status, Reason: v.Reason, Request: body})
	if err != nil {
		w.log.Error("add-checkpoint: keep the refused request", "origin", v.Checkpoint.Origin, "error", err)
	}
}

// Refusal is a refused add-checkpoint whose checkpoint the log's own key
// signed: a fork, a rollback, a proof that does not verify. It is evidence
// that the log asked for what it should not get. A 409 (another old size)
// is the protocol's ordinary course and is not kept.
type Refusal struct {
	ID      int64     `json:"id"`
	Time    time.Time `json:"time"`
	Origin  string    `json:"origin"`
	Status  int       `json:"status"`
	Reason  string    `json:"reason"`
	Request []byte    `json:"request"` // the request body as received (base64 in JSON)
}

// Refused lists the refused requests kept, oldest first.
func (w *Witness) Refused(ctx context.Context) ([]Refusal, error) { return w.store.refused(ctx) }

// oneLine keeps a reason to its first line.
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
