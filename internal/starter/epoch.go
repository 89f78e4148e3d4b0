package starter

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.temporal.io/api/enums/v1"
	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/rewards"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/workflows"
)

// WorkflowStarter starts workflows; a Temporal client is one.
type WorkflowStarter interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// EpochRecords is the store as epoch routes and metrics need it: epochs
// created, restarted and read, their counts, and the evidence that anchors
// a finished one's commitment with its receipt.
type EpochRecords interface {
	ReceiptRows
	CreateEpoch(ctx context.Context, ne store.NewEpoch, maxInFlight int) (store.Epoch, bool, error)
	RestartEpoch(ctx context.Context, id, requestHash string, deadline time.Time, maxInFlight int) (store.Epoch, error)
	GetEpoch(ctx context.Context, id string) (store.Epoch, error)
	GetEvidence(ctx context.Context, id string) (store.Evidence, error)
	EpochStats(ctx context.Context) (store.EpochStats, error)
	QuarantinedEpochs(ctx context.Context, limit int) ([]string, error)
}

// EpochOptions are the API's reward-epoch settings.
type EpochOptions struct {
	MaxInFlight int           // epochs queued or computing at once; beyond, 429
	Duration    time.Duration // epoch_duration: an epoch must finish within half of it
	Heartbeat   time.Duration // heartbeat timeout of the long epoch steps
	// AcceptTimeout is how long compute waits for Temporal to accept the
	// epoch's workflow before it answers 503 with Retry-After (0: 2 s).
	AcceptTimeout time.Duration
}

// DefaultAcceptTimeout is compute's accept deadline unless configured (seed 001: 2 s).
const DefaultAcceptTimeout = 2 * time.Second

// maxQuarantinedSeries bounds keeper_epoch_quarantined's series: the most
// recently quarantined epochs; keeper_epochs_quarantined counts them all.
const maxQuarantinedSeries = 100

const (
	maxSourceLen     = 2048
	epochRetryAfter  = "5"
	epochPathPrefix  = "/rewarder/epochs/"
	maxEpochDeadline = 7 * 24 * time.Hour
)

var epochIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// epochRoutes are the reward-epoch endpoints and, when keeper runs the
// built-in ledger, the ledger's.
func (a *API) epochRoutes() []route {
	routes := []route{
		{"/rewarder/epochs/{id}/compute", map[string]http.HandlerFunc{"POST": a.computeEpoch}},
		{"/rewarder/epochs/{id}", map[string]http.HandlerFunc{"GET": a.getEpoch}},
	}
	if a.Ledger != nil {
		routes = append(routes,
			route{"/ledger/v1/intents", map[string]http.HandlerFunc{"POST": jsonOnly(a.Ledger.PostIntent)}},
			route{"/ledger/v1/intents/{key}", map[string]http.HandlerFunc{"GET": a.Ledger.GetIntent}},
			route{"/ledger/v1/epochs/{epoch}/intents", map[string]http.HandlerFunc{"GET": a.Ledger.ListIntents}},
		)
	}
	return routes
}

// decodeEpoch parses and validates a compute request. It is pure: nothing is
// stored until it succeeds. Inline usage comes back sealed (canonical), and
// its hash is the request's hash; a source request is hashed from its pool
// and URL.
func decodeEpoch(id string, body []byte) (store.NewEpoch, time.Duration, *apiError) {
	var req api.EpochRequest
	if err := decodeStrict(body, &req); err != nil {
		return store.NewEpoch{}, 0, err
	}
	given := givenFields(body)
	ne := store.NewEpoch{ID: id}
	if !given["pool"] {
		return ne, 0, badRequest("missing_field", "pool", "pool (a decimal string of integer minor units) is required")
	}
	pool, err := rewards.ParseAmount(req.Pool)
	if err != nil || pool.IsZero() || pool.Cmp(rewards.MaxPool) > 0 {
		return ne, 0, badRequest("invalid_pool", "pool", "pool must be a decimal string of integer minor units from 1 to 2^127 (170141183460469231731687303715884105728)")
	}
	ne.Pool = pool.String()

	var deadline time.Duration
	if given["deadline"] {
		d, err := time.ParseDuration(req.Deadline)
		if err != nil || d <= 0 || d > maxEpochDeadline {
			return ne, 0, badRequest("invalid_deadline", "deadline", "deadline must be a duration from now such as \"90s\", \"15m\" or \"2h\", at most 168h")
		}
		deadline = d
	}

	switch {
	case given["usage"] && given["source"]:
		return ne, 0, badRequest("conflicting_fields", "usage", "give either usage (inline) or source (a URL), not both")
	case given["usage"]:
		usage := make([]rewards.Usage, len(req.Usage))
		for i, u := range req.Usage {
			usage[i] = rewards.Usage(u)
		}
		if uerr := rewards.CheckUsage(usage); uerr != nil {
			field := "usage"
			if uerr.Index >= 0 {
				field = fmt.Sprintf("usage[%d].%s", uerr.Index, uerr.Field)
			}
			return ne, 0, badRequest(uerr.Code, field, uerr.Error())
		}
		sealed, err := rewards.Seal(pool, usage)
		if err != nil {
			return ne, 0, badRequest("invalid_usage", "usage", err.Error())
		}
		ne.Usage, ne.RequestHash = sealed, rewards.Hash(sealed)
	case given["source"]:
		// URLs are ASCII: a host that is not (a homoglyph, a right-to-left
		// override) would only fail later, at the fetch, or mislead whoever
		// reads the manifest. International hosts are written in punycode.
		u, err := url.Parse(req.Source)
		if err != nil || strings.ContainsFunc(req.Source, func(r rune) bool { return r <= ' ' || r > '~' }) ||
			(u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(u.String()) > maxSourceLen {
			return ne, 0, badRequest("invalid_source", "source", fmt.Sprintf("source must be an http or https URL in printable ASCII (punycode hosts) without credentials, at most %d characters", maxSourceLen))
		}
		ne.Source = u.String()
		h := sha256.Sum256([]byte("keeper-epoch-request v1\npool " + ne.Pool + "\nsource " + ne.Source + "\n"))
		ne.RequestHash = hex.EncodeToString(h[:])
	default:
		return ne, 0, badRequest("missing_field", "usage", "give usage (a list of {\"account\", \"units\"}) or source (the URL of an accounting service that answers that list)")
	}
	return ne, deadline, nil
}

func epochID(r *http.Request) (string, *apiError) {
	id := r.PathValue("id")
	if !epochIDPattern.MatchString(id) {
		return "", badRequest("invalid_id", "id", "epoch ids are 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit")
	}
	return id, nil
}

// timeout is an epoch's whole budget: half the epoch duration (docs/epochs.md),
// or the caller's deadline when that is sooner.
func (a *API) timeout(callerDeadline time.Duration) time.Duration {
	t := a.Epochs.Duration / 2
	if callerDeadline > 0 && callerDeadline < t {
		t = callerDeadline
	}
	return t
}

// rerunRequested reads compute's rerun query parameter: true asks for a
// quarantined epoch to run again (docs/epochs.md, re-runs).
func rerunRequested(r *http.Request) (bool, *apiError) {
	switch v := r.URL.Query().Get("rerun"); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, badRequest("invalid_rerun", "rerun", "rerun must be true or false")
}

func (a *API) computeEpoch(w http.ResponseWriter, r *http.Request) {
	fail := func(e *apiError) { writeError(w, e) }
	if a.draining.Load() {
		w.Header().Set("Retry-After", epochRetryAfter)
		fail(&apiError{Status: http.StatusServiceUnavailable, Code: "draining", Message: "keeper is shutting down; retry against another node or later"})
		return
	}
	if a.Temporal == nil {
		fail(&apiError{Status: http.StatusServiceUnavailable, Code: "epochs_unavailable", Message: "this node does not start reward epochs"})
		return
	}
	id, aerr := epochID(r)
	if aerr != nil {
		fail(aerr)
		return
	}
	rerun, aerr := rerunRequested(r)
	if aerr != nil {
		fail(aerr)
		return
	}
	body, aerr := a.readBody(w, r)
	if aerr != nil {
		if aerr.Code == "body_too_large" {
			aerr.Field, aerr.Message = "usage", aerr.Message+"; send a usage list that large through source (the URL of an accounting service)"
		}
		fail(aerr)
		return
	}
	ne, callerDeadline, aerr := decodeEpoch(id, body)
	if aerr == nil && ne.Source != "" {
		if err := a.Outbound.CheckURL(ne.Source); err != nil {
			aerr = badRequest("invalid_source", "source", "source "+err.Error())
		}
	}
	if aerr != nil {
		fail(aerr)
		return
	}
	timeout := a.timeout(callerDeadline)
	ne.Deadline = time.Now().Add(timeout)
	ctx := r.Context()
	// The accept deadline runs from here: the body is read, and what is
	// left is keeper's own work and Temporal's acceptance.
	acceptTimeout := a.Epochs.AcceptTimeout
	if acceptTimeout <= 0 {
		acceptTimeout = DefaultAcceptTimeout
	}
	acceptCtx, cancel := context.WithTimeout(ctx, acceptTimeout)
	defer cancel()

	e, created, err := a.Store.CreateEpoch(ctx, ne, a.Epochs.MaxInFlight)
	if errors.Is(err, store.ErrBusy) {
		a.busy(w, err)
		return
	}
	if err != nil {
		fail(a.internal("store epoch", err))
		return
	}
	restart := false
	if !created {
		if e.RequestHash != ne.RequestHash {
			fail(&apiError{Status: http.StatusConflict, Code: "epoch_conflict", Field: "id",
				Message: fmt.Sprintf("epoch %s exists with other inputs (request hash %s, this request's %s); an epoch's inputs never change", id, e.RequestHash, ne.RequestHash)})
			return
		}
		switch e.Status {
		case store.EpochCompleted:
			if rerun {
				fail(&apiError{Status: http.StatusConflict, Code: "epoch_completed", Field: "rerun",
					Message: fmt.Sprintf("epoch %s completed: every intent was acknowledged; a completed epoch never runs again", id)})
				return
			}
			a.writeManifest(w, r, http.StatusOK, e)
			return
		case store.EpochQuarantined:
			// A quarantined epoch stays so, its intents not sent again,
			// until a re-run is asked for explicitly (?rerun=true).
			if !rerun {
				a.writeManifest(w, r, http.StatusOK, e)
				return
			}
			fallthrough
		case store.EpochFailed:
			// The same request again re-runs a failed epoch (a missed
			// deadline, a source that was down for good), and ?rerun=true
			// a quarantined one: intents are idempotent, so nothing is
			// paid twice.
			e, err = a.Store.RestartEpoch(ctx, id, ne.RequestHash, ne.Deadline, a.Epochs.MaxInFlight)
			switch {
			case errors.Is(err, store.ErrBusy):
				a.busy(w, err)
				return
			case errors.Is(err, store.ErrConflict): // restarted meanwhile by another request
				if e, err = a.Store.GetEpoch(ctx, id); err != nil {
					fail(a.internal("load epoch", err))
					return
				}
			case err != nil:
				fail(a.internal("restart epoch", err))
				return
			default:
				restart = true
			}
		default: // queued or computing: make sure its workflow runs, within its own deadline
			timeout = time.Until(e.Deadline)
		}
	}
	if err := a.startEpoch(acceptCtx, e, timeout, restart); err != nil {
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &already) { // its run completed between our read and the start
			if e, err = a.Store.GetEpoch(ctx, id); err == nil {
				a.writeManifest(w, r, http.StatusOK, e)
				return
			}
		}
		a.Logger.Warn("api: start epoch workflow", "epoch", id, "error", err)
		msg := "the epoch is queued but its workflow could not be started; send the same request again to start it"
		if acceptCtx.Err() != nil && ctx.Err() == nil {
			msg = fmt.Sprintf("the epoch is queued but Temporal did not accept its workflow within %s; send the same request again to start it (or join it, if Temporal took it meanwhile)", acceptTimeout)
		}
		w.Header().Set("Retry-After", epochRetryAfter)
		fail(&apiError{Status: http.StatusServiceUnavailable, Code: "temporal_unavailable", Message: msg})
		return
	}
	if e, err = a.Store.GetEpoch(ctx, id); err != nil {
		fail(a.internal("load epoch", err))
		return
	}
	w.Header().Set("Location", epochPathPrefix+id)
	a.writeManifest(w, r, http.StatusAccepted, e)
}

func (a *API) busy(w http.ResponseWriter, err error) {
	a.epochMetrics.busy.WithLabelValues("compute").Inc()
	w.Header().Set("Retry-After", epochRetryAfter)
	writeError(w, &apiError{Status: http.StatusTooManyRequests, Code: "busy", Message: err.Error() + "; retry later"})
}

// startEpoch starts the epoch's workflow. The workflow id de-duplicates: a
// run in progress is used as it is, and a completed run is never started
// again (Temporal refuses; only a failed run may be followed by another). A
// restart replaces a run that Temporal has not timed out yet.
func (a *API) startEpoch(ctx context.Context, e store.Epoch, timeout time.Duration, restart bool) error {
	conflict := enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING
	if restart {
		conflict = enums.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING
	}
	opts := client.StartWorkflowOptions{
		ID:                       workflows.EpochWorkflowID(e.ID),
		TaskQueue:                workflows.EpochTaskQueue,
		WorkflowExecutionTimeout: timeout,
		WorkflowIDConflictPolicy: conflict,
		WorkflowIDReusePolicy:    enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY,
		TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.SAStatus.ValueSet(store.EpochQueued)),
	}
	in := workflows.EpochInput{EpochID: e.ID, Run: e.Run, Policy: workflows.EpochPolicy{ActivityTimeout: timeout, Heartbeat: a.Epochs.Heartbeat}}
	_, err := a.Temporal.ExecuteWorkflow(ctx, opts, workflows.EpochCompute, in)
	return err
}

func (a *API) getEpoch(w http.ResponseWriter, r *http.Request) {
	id, aerr := epochID(r)
	if aerr != nil {
		writeError(w, aerr)
		return
	}
	e, err := a.Store.GetEpoch(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, &apiError{Status: http.StatusNotFound, Code: "not_found", Field: "id", Message: "no epoch " + id})
	case err != nil:
		writeError(w, a.internal("load epoch", err))
	default:
		a.writeManifest(w, r, http.StatusOK, e)
	}
}

func (a *API) writeManifest(w http.ResponseWriter, r *http.Request, status int, e store.Epoch) {
	m := api.Manifest{
		Epoch: e.ID, Status: e.Status, Reason: e.Reason, Run: e.Run, RequestHash: e.RequestHash, InputsHash: e.InputsHash,
		Pool: e.Pool, Source: e.Source, TotalUnits: e.TotalUnits, TotalPaid: e.TotalPaid, Accounts: e.Accounts, Commitment: e.Commitment,
		Artifacts: []api.Artifact{},
		Intents:   api.IntentCounts{Total: e.IntentsTotal, Emitted: e.IntentsEmitted, Acknowledged: e.IntentsAcknowledged},
		Deadline:  e.Deadline.Format(time.RFC3339Nano),
		Timings:   map[string]string{},
		Links:     map[string]string{"self": epochPathPrefix + e.ID},
	}
	if m.InputsHash == "" && e.Inline {
		m.InputsHash = e.RequestHash // inline usage was sealed at intake: the request hash is the inputs hash
	}
	for _, art := range []api.Artifact{
		{Name: "inputs", Path: e.InputsPath, SHA256: e.InputsHash},
		{Name: "payouts", Path: e.PayoutsPath, SHA256: e.PayoutsHash},
		{Name: "run.json", Path: e.RunPath, SHA256: e.RunHash},
		{Name: "commitment", Path: e.CommitmentPath, SHA256: e.CommitmentHash},
	} {
		if art.Path != "" {
			m.Artifacts = append(m.Artifacts, art)
		}
	}
	for name, t := range map[string]time.Time{
		"queued_at": e.CreatedAt, "started_at": e.StartedAt, "sealed_at": e.SealedAt, "computed_at": e.ComputedAt,
		"written_at": e.WrittenAt, "intents_at": e.IntentsAt, "anchored_at": e.AnchoredAt, "finished_at": e.FinishedAt,
	} {
		if !t.IsZero() {
			m.Timings[name] = t.Format(time.RFC3339Nano)
		}
	}
	if !e.FinishedAt.IsZero() && !e.CreatedAt.IsZero() {
		m.Timings["total_ms"] = strconv.FormatInt(e.FinishedAt.Sub(e.CreatedAt).Milliseconds(), 10)
	}
	if e.EvidenceID != "" {
		m.Anchor = &api.EpochAnchor{EvidenceID: e.EvidenceID}
		m.Links["evidence"] = "/v1/evidence/" + e.EvidenceID
		ev, err := a.Store.GetEvidence(r.Context(), e.EvidenceID)
		if err != nil {
			writeError(w, a.internal("load the commitment's evidence", err))
			return
		}
		m.Anchor.Status = string(ev.Status)
		if ev.Status == store.StatusConfirmed {
			rc, err := ReceiptOf(r.Context(), a.Store, ev)
			if err != nil {
				writeError(w, a.internal("build the commitment's receipt", err))
				return
			}
			m.Anchor.Receipt = &rc
			m.Links["receipt"] = "/v1/evidence/" + ev.ID + "/receipt"
		}
	}
	writeJSON(w, status, m)
}

// epochMetrics are the epoch metrics (docs/epochs.md) that the API can see: rejections it
// answered, and counts read from the store at scrape time (so every API node
// reports the same numbers).
type epochMetrics struct {
	busy *prometheus.CounterVec
}

func (a *API) registerEpochMetrics() {
	a.epochMetrics = &epochMetrics{busy: a.metrics.busy}
	a.metrics.registry.MustRegister(epochCollector{a.Store})
}

var (
	queueDepthDesc = prometheus.NewDesc("keeper_queue_depth", "Work waiting by queue: epochs in flight (queued or computing), and intents of in-flight epochs not yet acknowledged by the ledger.", []string{"queue"}, nil)
	quarantineDesc = prometheus.NewDesc("keeper_epochs_quarantined", "Epochs quarantined now: inputs or payouts that failed a check (no intents were emitted), or intents that could not all be delivered (a count of stored epochs, so a gauge).", nil, nil)
)

var quarantinedDesc = prometheus.NewDesc("keeper_epoch_quarantined", "1 for each quarantined epoch, by epoch id: the 100 most recently quarantined (keeper_epochs_quarantined counts them all); a re-run removes its series.", []string{"epoch"}, nil)

type epochCollector struct{ st EpochRecords }

func (c epochCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- quarantineDesc
	ch <- quarantinedDesc
}

func (c epochCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	s, err := c.st.EpochStats(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, err)
		return
	}
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(s.InFlight), "epochs")
	ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(s.IntentsPending), "intents")
	ch <- prometheus.MustNewConstMetric(quarantineDesc, prometheus.GaugeValue, float64(s.Quarantined))
	if s.Quarantined == 0 {
		return
	}
	ids, err := c.st.QuarantinedEpochs(ctx, maxQuarantinedSeries)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(quarantinedDesc, err)
		return
	}
	for _, id := range ids {
		ch <- prometheus.MustNewConstMetric(quarantinedDesc, prometheus.GaugeValue, 1, id)
	}
}
