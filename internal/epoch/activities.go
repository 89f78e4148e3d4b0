package epoch

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/internal/retry"
	"github.com/keeperhq/keeper/internal/rewards"
	"github.com/keeperhq/keeper/internal/settlement"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/urlpolicy"
	"github.com/keeperhq/keeper/internal/workflows"
	"github.com/keeperhq/keeper/merkle"
)

// Intent emission: intents go out in pages (progress is recorded and
// heartbeated per page, so a retried EmitIntents resumes at the page it was
// on), each page with this many requests in flight.
const (
	IntentPage        = 1000
	intentConcurrency = 32
	maxSourceBytes    = 1 << 30 // an accounting source's answer; ~20 M accounts
)

// Runs is the store as the epoch activities need it: a run's request and
// each step's record, and the evidence that anchors its commitment
// (*store.Store).
type Runs interface {
	EpochRequest(ctx context.Context, id string, run int) (store.EpochRequest, error)
	StartEpoch(ctx context.Context, id string, run int) error
	RecordSealed(ctx context.Context, id string, run int, hash, path string, accounts int) error
	RecordComputed(ctx context.Context, id string, run int, c store.Computed) error
	RecordArtifacts(ctx context.Context, id string, run int, a store.Artifacts) error
	RecordIntents(ctx context.Context, id string, run int, emitted, acknowledged int, done bool) error
	InsertEvidence(ctx context.Context, ne store.NewEvidence) (store.Evidence, bool, error)
	RecordAnchor(ctx context.Context, id string, run int, evidenceID string) error
	FinishEpoch(ctx context.Context, id string, run int, status, reason string) error
}

// Activities are the reward-epoch activities, EpochCompute's steps, with
// their dependencies.
type Activities struct {
	Store       Runs
	ArtifactDir string             // shared by every worker that runs epochs
	Ledger      *settlement.Client // where settlement intents go
	HTTP        *http.Client       // fetches usage from accounting sources
	Chains      []string           // chains the commitment is anchored on
	CallTimeout time.Duration      // longest an upstream call may go without progress (docs/retries.md, upstream)
	Metrics     *UpstreamMetrics
	Logger      *slog.Logger

	heavyOnce sync.Once
	heavy     chan struct{}
}

// SealInputs marks the epoch computing, reads its inline usage or fetches it
// from its accounting source, and writes the canonical inputs to the
// artifact directory under their SHA-256. Only the hash and path go back to
// the workflow.
func (a *Activities) SealInputs(ctx context.Context, ref workflows.EpochRef) (workflows.SealResult, error) {
	defer a.keepAlive(ctx, nil)()
	res, err := a.seal(ctx, ref)
	return res, a.classify(fmt.Sprintf("seal inputs of epoch %s", ref.EpochID), err)
}

func (a *Activities) seal(ctx context.Context, ref workflows.EpochRef) (workflows.SealResult, error) {
	if err := a.Store.StartEpoch(ctx, ref.EpochID, ref.Run); err != nil {
		return workflows.SealResult{}, err
	}
	req, err := a.Store.EpochRequest(ctx, ref.EpochID, ref.Run)
	if err != nil {
		return workflows.SealResult{}, err
	}
	sealed := req.Usage // inline usage was sealed by the API
	if req.Source != "" {
		pool, err := rewards.ParseAmount(req.Pool)
		if err != nil {
			return workflows.SealResult{}, retry.Permanent(fmt.Errorf("stored pool %q: %w", req.Pool, err))
		}
		usage, err := a.fetchUsage(ctx, req.Source)
		if err != nil {
			return workflows.SealResult{}, err
		}
		release, err := a.acquireHeavy(ctx)
		if err != nil {
			return workflows.SealResult{}, err
		}
		defer release()
		if sealed, err = rewards.Seal(pool, usage); err != nil {
			return workflows.SealResult{}, retry.Permanent(fmt.Errorf("source %s: %w", req.Source, err))
		}
	}
	hash := rewards.Hash(sealed)
	rel := inputsPath(hash)
	if _, err := os.Stat(a.abs(rel)); err != nil {
		if _, err := writeAtomic(a.abs(rel), func(w io.Writer) error { _, err := w.Write(sealed); return err }); err != nil {
			return workflows.SealResult{}, err
		}
	}
	accounts := bytes.Count(sealed, []byte{'\n'}) - 2 // header and pool lines
	if err := a.Store.RecordSealed(ctx, ref.EpochID, ref.Run, hash, rel, accounts); err != nil {
		return workflows.SealResult{}, err
	}
	return workflows.SealResult{InputsHash: hash, InputsPath: rel, Accounts: accounts}, nil
}

// fetchUsage GETs the usage list from an accounting source. The call is
// idempotent, so it is retried under the short read retry (docs/retries.md,
// upstream); a 4xx or a body that is not a usage list is permanent.
func (a *Activities) fetchUsage(ctx context.Context, source string) ([]rewards.Usage, error) {
	var usage []rewards.Usage
	err := callIdempotent(ctx, a.Metrics, "source", a.CallTimeout, isTemporaryHTTP, func(ctx context.Context, progress func()) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, source, nil)
		if err != nil {
			return retry.Permanent(err)
		}
		req.Header.Set("Accept", "application/json")
		resp, err := a.HTTP.Do(req)
		if urlpolicy.IsRefused(err) {
			return retry.Permanent(err) // an address keeper must not reach: asking again cannot help
		}
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		progress()
		if resp.StatusCode != http.StatusOK {
			// The status only: the answer's body is the upstream's (or, for
			// a URL that should not have been fetched, someone else's)
			// and never reaches the epoch's reason, logs or history.
			err := &httpStatusError{Status: resp.StatusCode}
			if !err.temporary() {
				return retry.Permanent(err) // the service refuses this request: asking again cannot help
			}
			return err
		}
		body := &progressReader{r: io.LimitReader(resp.Body, maxSourceBytes+1), progress: progress}
		usage = nil
		if err := json.NewDecoder(body).Decode(&usage); err != nil {
			if ctx.Err() != nil || body.err != nil {
				return fmt.Errorf("read usage: %w", errors.Join(err, body.err, ctx.Err()))
			}
			return retry.Permanent(fmt.Errorf("the answer is not a JSON list of {\"account\", \"units\"} strings: %w", err))
		}
		if body.n > maxSourceBytes {
			return retry.Permanent(fmt.Errorf("the answer is larger than %d bytes", maxSourceBytes))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("fetch usage from %s: %w", source, err)
	}
	return usage, nil
}

type httpStatusError struct {
	Status int
}

func (e *httpStatusError) Error() string {
	return fmt.Sprintf("HTTP %d %s", e.Status, http.StatusText(e.Status))
}

func (e *httpStatusError) temporary() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout
}

// isTemporaryHTTP: anything but a refusal (a 4xx other than 408 and 429, a
// body that is not a usage list) may go better on the next attempt.
func isTemporaryHTTP(err error) bool { return !retry.IsPermanent(err) }

type progressReader struct {
	r        io.Reader
	progress func()
	n        int64
	err      error
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.n += int64(n)
		p.progress()
	}
	if err != nil && err != io.EOF {
		p.err = err
	}
	return n, err
}

// ComputeRewards splits the pool over the sealed inputs and runs the
// conservation check. Inputs or payouts that fail a check end the activity
// with a non-retryable Quarantine error. The payouts go to the artifact
// directory as canonical lines, one "<account> <amount>" per account.
func (a *Activities) ComputeRewards(ctx context.Context, ref workflows.EpochRef, seal workflows.SealResult) (workflows.ComputeResult, error) {
	defer a.keepAlive(ctx, nil)()
	res, err := a.compute(ctx, ref, seal)
	return res, a.classify(fmt.Sprintf("compute rewards of epoch %s", ref.EpochID), err)
}

func (a *Activities) compute(ctx context.Context, ref workflows.EpochRef, seal workflows.SealResult) (workflows.ComputeResult, error) {
	release, err := a.acquireHeavy(ctx)
	if err != nil {
		return workflows.ComputeResult{}, err
	}
	defer release()
	sealed, err := a.readVerified(seal.InputsPath, seal.InputsHash)
	if err != nil {
		return workflows.ComputeResult{}, err
	}
	in, err := rewards.ParseSealed(sealed)
	if err != nil {
		return workflows.ComputeResult{}, err
	}
	split, err := rewards.Compute(in)
	if err != nil {
		return workflows.ComputeResult{}, err
	}
	rel := epochPath(ref.EpochID, "payouts.txt")
	intents := 0
	hash, err := writeAtomic(a.abs(rel), func(w io.Writer) error {
		line := make([]byte, 0, 256)
		for i, e := range in.Entries {
			if !split.Payouts[i].IsZero() {
				intents++
			}
			line = append(rewards.AppendLine(line[:0], e.Account, split.Payouts[i]), '\n')
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return workflows.ComputeResult{}, err
	}
	out := workflows.ComputeResult{PayoutsHash: hash, PayoutsPath: rel, Accounts: len(in.Entries), Intents: intents, TotalPaid: split.TotalPaid.String()}
	err = a.Store.RecordComputed(ctx, ref.EpochID, ref.Run, store.Computed{
		PayoutsHash: hash, PayoutsPath: rel, Accounts: out.Accounts, TotalUnits: split.TotalUnits.String(), TotalPaid: out.TotalPaid, Intents: intents,
	})
	return out, err
}

// WriteArtifacts writes the run's run.json (inputs hash, parameters, every
// payout, totals) and commitment (the RFC 6962 root over the payout lines),
// each atomically. Running it again writes the same bytes.
func (a *Activities) WriteArtifacts(ctx context.Context, ref workflows.EpochRef, in workflows.ArtifactsInput) (workflows.ArtifactsResult, error) {
	defer a.keepAlive(ctx, nil)()
	res, err := a.writeArtifacts(ctx, ref, in)
	return res, a.classify(fmt.Sprintf("write artifacts of epoch %s", ref.EpochID), err)
}

// splitRule and commitmentRule describe the run in run.json's parameters.
const (
	splitRule      = "floor(pool * units / total_units) per account; the remainder one minor unit each by largest fractional part, ties by account order"
	commitmentRule = "rfc6962-sha256 Merkle root over the payout lines \"<account> <amount>\" in account order"
)

func (a *Activities) writeArtifacts(ctx context.Context, ref workflows.EpochRef, in workflows.ArtifactsInput) (workflows.ArtifactsResult, error) {
	release, err := a.acquireHeavy(ctx)
	if err != nil {
		return workflows.ArtifactsResult{}, err
	}
	defer release()
	sealed, err := a.readVerified(in.Inputs.InputsPath, in.Inputs.InputsHash)
	if err != nil {
		return workflows.ArtifactsResult{}, err
	}
	inputs, err := rewards.ParseSealed(sealed)
	if err != nil {
		return workflows.ArtifactsResult{}, retry.Permanent(err) // ComputeRewards read the same bytes
	}
	payouts, err := a.readVerified(in.Payouts.PayoutsPath, in.Payouts.PayoutsHash)
	if err != nil {
		return workflows.ArtifactsResult{}, err
	}
	lines := strings.Split(strings.TrimSuffix(string(payouts), "\n"), "\n")
	if len(lines) != len(inputs.Entries) {
		return workflows.ArtifactsResult{}, retry.Permanent(fmt.Errorf("%d payout lines for %d accounts", len(lines), len(inputs.Entries)))
	}
	tree := merkle.NewRootBuilder()
	var totalUnits rewards.Amount
	for i, l := range lines {
		account, _, err := rewards.ParseLine(l)
		if err != nil || account != inputs.Entries[i].Account {
			return workflows.ArtifactsResult{}, retry.Permanent(fmt.Errorf("payout line %d does not match account %s: %v", i+1, inputs.Entries[i].Account, err))
		}
		tree.Add([]byte(l))
		totalUnits, _ = totalUnits.Add(rewards.AmountOf(inputs.Entries[i].Units))
	}
	root, err := tree.Root()
	if err != nil {
		return workflows.ArtifactsResult{}, retry.Permanent(err)
	}
	commitment := hex.EncodeToString(root[:])

	runRel := epochPath(ref.EpochID, "run.json")
	runHash, err := writeAtomic(a.abs(runRel), func(w io.Writer) error {
		head, _ := json.MarshalIndent(runHeader{
			Version: 1, Epoch: ref.EpochID, InputsHash: in.Inputs.InputsHash, PayoutsHash: in.Payouts.PayoutsHash,
			Parameters: runParameters{Pool: inputs.Pool.String(), Split: splitRule, Commitment: commitmentRule},
			Totals:     runTotals{Accounts: len(lines), TotalUnits: totalUnits.String(), TotalPaid: in.Payouts.TotalPaid, Intents: in.Payouts.Intents},
			Commitment: commitment,
		}, "", "  ")
		// The header without its closing brace, then the payouts streamed one per line.
		head = bytes.TrimSuffix(head, []byte("\n}"))
		if _, err := w.Write(append(head, ",\n  \"payouts\": [\n"...)); err != nil {
			return err
		}
		buf := make([]byte, 0, 512)
		for i, l := range lines {
			account, amount, _ := strings.Cut(l, " ")
			buf = append(buf[:0], `    {"account": `...)
			buf = appendJSONString(buf, account)
			buf = append(buf, `, "units": "`...)
			buf = strconv.AppendUint(buf, inputs.Entries[i].Units, 10)
			buf = append(buf, `", "amount": "`...)
			buf = append(buf, amount...)
			buf = append(buf, `"}`...)
			if i < len(lines)-1 {
				buf = append(buf, ',')
			}
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		_, err := io.WriteString(w, "  ]\n}\n")
		return err
	})
	if err != nil {
		return workflows.ArtifactsResult{}, err
	}
	comRel := epochPath(ref.EpochID, "commitment")
	comHash, err := writeAtomic(a.abs(comRel), func(w io.Writer) error {
		_, err := io.WriteString(w, commitment+"\n")
		return err
	})
	if err != nil {
		return workflows.ArtifactsResult{}, err
	}
	out := workflows.ArtifactsResult{RunPath: runRel, RunHash: runHash, Commitment: commitment, CommitmentPath: comRel, CommitmentHash: comHash}
	err = a.Store.RecordArtifacts(ctx, ref.EpochID, ref.Run, store.Artifacts{
		RunHash: runHash, RunPath: runRel, Commitment: commitment, CommitmentHash: comHash, CommitmentPath: comRel,
	})
	return out, err
}

// runHeader is run.json without its payouts, which are streamed after it.
type runHeader struct {
	Version     int           `json:"version"`
	Epoch       string        `json:"epoch"`
	InputsHash  string        `json:"inputs_hash"`
	PayoutsHash string        `json:"payouts_hash"`
	Parameters  runParameters `json:"parameters"`
	Totals      runTotals     `json:"totals"`
	Commitment  string        `json:"commitment"`
}

type runParameters struct {
	Pool       string `json:"pool"`
	Split      string `json:"split"`
	Commitment string `json:"commitment"`
}

type runTotals struct {
	Accounts   int    `json:"accounts"`
	TotalUnits string `json:"total_units"`
	TotalPaid  string `json:"total_paid"`
	Intents    int    `json:"intents"`
}

// appendJSONString quotes an account name: printable ASCII, so only '"' and
// '\' need escaping.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// EmitIntents sends one settlement intent per payout above zero to the
// ledger, with Idempotency-Key epoch-<id>-<account>, in pages. Each page's
// progress is recorded and heartbeated, so a retry (after a crash, or once
// the ledger is back) resumes at the page it was on; intents it sends again
// are answered by the ledger from its records, never booked twice. A ledger
// that refuses an intent (422: the key was used for another amount) fails
// the activity for good.
func (a *Activities) EmitIntents(ctx context.Context, ref workflows.EpochRef, payouts workflows.ComputeResult) (workflows.IntentsResult, error) {
	var page atomic.Int64
	if activity.HasHeartbeatDetails(ctx) {
		var from int64
		if activity.GetHeartbeatDetails(ctx, &from) == nil {
			page.Store(from)
		}
	}
	defer a.keepAlive(ctx, func() any { return page.Load() })()
	res, err := a.emit(ctx, ref, payouts, &page)
	return res, a.classify(fmt.Sprintf("emit intents of epoch %s", ref.EpochID), err)
}

func (a *Activities) emit(ctx context.Context, ref workflows.EpochRef, payouts workflows.ComputeResult, page *atomic.Int64) (workflows.IntentsResult, error) {
	raw, err := a.readVerified(payouts.PayoutsPath, payouts.PayoutsHash)
	if err != nil {
		return workflows.IntentsResult{}, err
	}
	var intents []settlement.Intent
	for _, l := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		account, amount, err := rewards.ParseLine(l)
		if err != nil {
			return workflows.IntentsResult{}, retry.Permanent(err)
		}
		if amount != "0" {
			intents = append(intents, settlement.Intent{Epoch: ref.EpochID, Account: account, Amount: amount})
		}
	}
	var res workflows.IntentsResult
	var replayed atomic.Int64
	for start := int(page.Load()) * IntentPage; start < len(intents); start = int(page.Load()) * IntentPage {
		end := min(start+IntentPage, len(intents))
		if err := a.Store.RecordIntents(ctx, ref.EpochID, ref.Run, end, start, false); err != nil {
			return res, err
		}
		if err := a.sendPage(ctx, intents[start:end], &replayed); err != nil {
			return res, err
		}
		if err := a.Store.RecordIntents(ctx, ref.EpochID, ref.Run, end, end, end == len(intents)); err != nil {
			return res, err
		}
		page.Add(1)
		activity.RecordHeartbeat(ctx, page.Load())
	}
	if len(intents) == 0 {
		if err := a.Store.RecordIntents(ctx, ref.EpochID, ref.Run, 0, 0, true); err != nil {
			return res, err
		}
	}
	res.Emitted, res.Acknowledged, res.Replayed = len(intents), len(intents), int(replayed.Load())
	return res, nil
}

// sendPage sends a page of intents, intentConcurrency at a time, and returns
// the first failure (the rest of the page is abandoned).
func (a *Activities) sendPage(ctx context.Context, page []settlement.Intent, replayed *atomic.Int64) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < min(intentConcurrency, len(page)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(page) || ctx.Err() != nil {
					return
				}
				in := page[i]
				key := settlement.Key(in.Epoch, in.Account)
				err := callIdempotent(ctx, a.Metrics, "ledger", a.CallTimeout, settlement.IsTemporary, func(ctx context.Context, _ func()) error {
					_, again, err := a.Ledger.Submit(ctx, key, in)
					if again {
						replayed.Add(1)
					}
					return err
				})
				if err != nil {
					var le *settlement.Error
					if errors.As(err, &le) && !le.Temporary() {
						err = retry.Permanent(err)
					}
					cancel(fmt.Errorf("intent %s (%s %s): %w", key, in.Account, in.Amount, err))
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// AnchorCommitment hands the run's commitment to keeper's own intake as
// evidence (idempotency key epoch-<id>-commitment) on the configured chains;
// the dispatcher and AnchorBatch take it from there, and the epoch's manifest
// shows the receipt once it is confirmed.
func (a *Activities) AnchorCommitment(ctx context.Context, ref workflows.EpochRef, art workflows.ArtifactsResult) (workflows.AnchorResult, error) {
	res, err := a.anchor(ctx, ref, art)
	return res, a.classify(fmt.Sprintf("anchor commitment of epoch %s", ref.EpochID), err)
}

func (a *Activities) anchor(ctx context.Context, ref workflows.EpochRef, art workflows.ArtifactsResult) (workflows.AnchorResult, error) {
	root, err := hex.DecodeString(art.Commitment)
	if err != nil || len(root) != 32 {
		return workflows.AnchorResult{}, retry.Permanent(fmt.Errorf("commitment %q is not a hex SHA-256", art.Commitment))
	}
	chainList := append([]string(nil), a.Chains...)
	sort.Strings(chainList)
	meta, _ := json.Marshal(map[string]any{"epoch": ref.EpochID, "run": ref.Run, "run_hash": art.RunHash, "kind": "reward-epoch-commitment"})
	ne := store.NewEvidence{Chains: chainList, Priority: 5, IdempotencyKey: "epoch-" + ref.EpochID + "-commitment", Metadata: meta}
	copy(ne.Digest[:], root)
	ev, _, err := a.Store.InsertEvidence(ctx, ne)
	if err != nil {
		return workflows.AnchorResult{}, err
	}
	if ev.Digest != ne.Digest {
		return workflows.AnchorResult{}, retry.Permanent(fmt.Errorf("evidence %s already anchors another commitment (%x) for this epoch", ev.ID, ev.Digest))
	}
	if err := a.Store.RecordAnchor(ctx, ref.EpochID, ref.Run, ev.ID); err != nil {
		return workflows.AnchorResult{}, err
	}
	return workflows.AnchorResult{EvidenceID: ev.ID}, nil
}

// FinishEpoch records the run's outcome.
func (a *Activities) FinishEpoch(ctx context.Context, ref workflows.EpochRef, out workflows.EpochOutcome) error {
	err := a.Store.FinishEpoch(ctx, ref.EpochID, ref.Run, storeEpochStatus(out.Status), out.Reason)
	return a.classify(fmt.Sprintf("finish epoch %s as %s", ref.EpochID, out.Status), err)
}

// storeEpochStatus is the store's status for a run's outcome; anything else
// is passed on for the store to refuse.
func storeEpochStatus(status string) string {
	switch status {
	case workflows.EpochCompleted:
		return store.EpochCompleted
	case workflows.EpochQuarantined:
		return store.EpochQuarantined
	case workflows.EpochFailed:
		return store.EpochFailed
	}
	return status
}

// classify turns an error into what the workflow and its retry policy see:
// a failed check is a non-retryable Quarantine, a permanent error (or a
// write to a run that is no longer current) non-retryable, anything else is
// retried by the activity's retry policy.
func (a *Activities) classify(what string, err error) error {
	if err == nil {
		return nil
	}
	var v *rewards.Violation
	switch {
	case errors.As(err, &v):
		return temporal.NewNonRetryableApplicationError(v.Reason, workflows.ErrTypeQuarantine, nil)
	case retry.IsPermanent(err), errors.Is(err, store.ErrConflict), errors.Is(err, store.ErrNotFound):
		return temporal.NewNonRetryableApplicationError(what+": "+err.Error(), workflows.ErrTypePermanent, nil)
	}
	return temporal.NewApplicationError(what+": "+err.Error(), workflows.ErrTypeTransient)
}

// acquireHeavy bounds the steps that hold a whole epoch in memory (seal,
// compute, artifacts) to one per CPU, whatever the activity slots allow.
func (a *Activities) acquireHeavy(ctx context.Context) (func(), error) {
	a.heavyOnce.Do(func() { a.heavy = make(chan struct{}, runtime.GOMAXPROCS(0)) })
	select {
	case a.heavy <- struct{}{}:
		return func() { <-a.heavy }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// keepAlive heartbeats while an activity works, so a worker that dies is
// noticed after the heartbeat timeout rather than the whole start-to-close
// timeout. details, when set, gives the progress to heartbeat.
func (a *Activities) keepAlive(ctx context.Context, details func() any) (stop func()) {
	every := time.Second
	if hb := activity.GetInfo(ctx).HeartbeatTimeout; hb > 0 {
		every = min(every, hb/3)
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				if details != nil {
					activity.RecordHeartbeat(ctx, details())
				} else {
					activity.RecordHeartbeat(ctx)
				}
			}
		}
	}()
	return func() { close(done) }
}
