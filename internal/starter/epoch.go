package starter

import (
	"cmp"
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
	"github.com/keeperhq/keeper/internal/httpapi"
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

// DefaultAcceptTimeout is compute's accept deadline unless configured
// (docs/epochs.md, "Rules": accept deadline).
const DefaultAcceptTimeout = 2 * time.Second

// maxQuarantinedSeries bounds keeper_epoch_quarantined's series: the most
// recently quarantined epochs; keeper_epochs_quarantined counts them all.
const maxQuarantinedSeries = 100

const (
	maxSourceLen     = 2048
	epochRetryAfter  = 5 // seconds
	epochPathPrefix  = "/rewarder/epochs/"
	maxEpochDeadline = 7 * 24 * time.Hour
)

var epochIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// epochRoutes are the reward-epoch endpoints and, when keeper runs the
// built-in ledger, the ledger's.
func (a *API) epochRoutes() []httpapi.Route {
	routes := []httpapi.Route{
		{Pattern: "/rewarder/epochs/{id}/compute", Methods: httpapi.Methods{"POST": a.computeEpoch}},
		{Pattern: "/rewarder/epochs/{id}", Methods: httpapi.Methods{"GET": a.getEpoch}},
	}
	if a.Ledger != nil {
		routes = append(routes,
			httpapi.Route{Pattern: "/ledger/v1/intents", Methods: httpapi.Methods{"POST": httpapi.JSONOnly(a.Ledger.PostIntent)}},
			httpapi.Route{Pattern: "/ledger/v1/intents/{key}", Methods: httpapi.Methods{"GET": a.Ledger.GetIntent}},
			httpapi.Route{Pattern: "/ledger/v1/epochs/{epoch}/intents", Methods: httpapi.Methods{"GET": a.Ledger.ListIntents}},
		)
	}
	return routes
}

// decodeEpoch parses and validates a compute request. It is pure: nothing is
// stored until it succeeds. Inline usage comes back sealed (canonical), and
// its hash is the request's hash; a source request is hashed from its pool
// and URL.
func decodeEpoch(id string, body []byte) (store.NewEpoch, time.Duration, *httpapi.Error) {
	var req api.EpochRequest
	if err := httpapi.DecodeStrict(body, &req); err != nil {
		return store.NewEpoch{}, 0, err
	}
	given := httpapi.GivenFields(body)
	ne := store.NewEpoch{ID: id}
	if !given["pool"] {
		return ne, 0, httpapi.BadRequest("missing_field", "pool", "pool (a decimal string of integer minor units) is required")
	}
	pool, err := rewards.ParseAmount(req.Pool)
	if err != nil || pool.IsZero() || pool.Cmp(rewards.MaxPool) > 0 {
		return ne, 0, httpapi.BadRequest("invalid_pool", "pool", "pool must be a decimal string of integer minor units from 1 to 2^127 (170141183460469231731687303715884105728)")
	}
	ne.Pool = pool.String()

	var deadline time.Duration
	if given["deadline"] {
		d, err := time.ParseDuration(req.Deadline)
		if err != nil || d <= 0 || d > maxEpochDeadline {
			return ne, 0, httpapi.BadRequest("invalid_deadline", "deadline", "deadline must be a duration from now such as \"90s\", \"15m\" or \"2h\", at most 168h")
		}
		deadline = d
	}

	switch {
	case given["usage"] && given["source"]:
		return ne, 0, httpapi.BadRequest("conflicting_fields", "usage", "give either usage (inline) or source (a URL), not both")
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
			return ne, 0, httpapi.BadRequest(uerr.Code, field, uerr.Error())
		}
		sealed, err := rewards.Seal(pool, usage)
		if err != nil {
			return ne, 0, httpapi.BadRequest("invalid_usage", "usage", err.Error())
		}
		ne.Usage, ne.RequestHash = sealed, rewards.Hash(sealed)
	case given["source"]:
		// URLs are ASCII: a host that is not (a homoglyph, a right-to-left
		// override) would only fail later, at the fetch, or mislead whoever
		// reads the manifest. International hosts are written in punycode.
		u, err := url.Parse(req.Source)
		if err != nil || strings.ContainsFunc(req.Source, func(r rune) bool { return r <= ' ' || r > '~' }) ||
			(u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(u.String()) > maxSourceLen {
			return ne, 0, httpapi.BadRequest("invalid_source", "source", fmt.Sprintf("source must be an http or https URL in printable ASCII (punycode hosts) without credentials, at most %d characters", maxSourceLen))
		}
		ne.Source = u.String()
		h := sha256.Sum256([]byte("keeper-epoch-request v1\npool " + ne.Pool + "\nsource " + ne.Source + "\n"))
		ne.RequestHash = hex.EncodeToString(h[:])
	default:
		return ne, 0, httpapi.BadRequest("missing_field", "usage", "give usage (a list of {\"account\", \"units\"}) or source (the URL of an accounting service that answers that list)")
	}
	return ne, deadline, nil
}

func epochID(r *http.Request) (string, *httpapi.Error) {
	id := r.PathValue("id")
	if !epochIDPattern.MatchString(id) {
		return "", httpapi.BadRequest("invalid_id", "id", "epoch ids are 1–64 letters, digits, '.', '_' or '-', starting with a letter or digit")
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
func rerunRequested(r *http.Request) (bool, *httpapi.Error) {
	switch v := r.URL.Query().Get("rerun"); v {
	case "", "false":
		return false, nil
	case "true":
		return true, nil
	}
	return false, httpapi.BadRequest("invalid_rerun", "rerun", "rerun must be true or false")
}

func (a *API) computeEpoch(w http.ResponseWriter, r *http.Request) {
	req, aerr := a.readCompute(w, r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	e, started, aerr := a.runEpoch(r.Context(), req)
	switch {
	case aerr != nil:
		httpapi.WriteError(w, aerr)
	case started:
		w.Header().Set("Location", epochPathPrefix+req.epoch.ID)
		a.writeManifest(w, r, http.StatusAccepted, e)
	default:
		a.writeManifest(w, r, http.StatusOK, e)
	}
}

// computeRequest is a compute request, read and checked.
type computeRequest struct {
	epoch   store.NewEpoch // without its deadline, which runs from when the request is read
	rerun   bool           // ?rerun=true: run a quarantined epoch again
	timeout time.Duration  // the epoch's whole budget
}

// readCompute reads and checks a compute request; nothing is stored.
func (a *API) readCompute(w http.ResponseWriter, r *http.Request) (computeRequest, *httpapi.Error) {
	if a.drain().Draining() {
		return computeRequest{}, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "draining", RetryAfter: epochRetryAfter, Message: "keeper is shutting down; retry against another node or later"}
	}
	if a.Temporal == nil {
		return computeRequest{}, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "epochs_unavailable", Message: "this node does not start reward epochs"}
	}
	id, aerr := epochID(r)
	if aerr != nil {
		return computeRequest{}, aerr
	}
	rerun, aerr := rerunRequested(r)
	if aerr != nil {
		return computeRequest{}, aerr
	}
	body, aerr := a.readBody(w, r)
	if aerr != nil {
		if aerr.Code == "body_too_large" {
			aerr.Field, aerr.Message = "usage", aerr.Message+"; send a usage list that large through source (the URL of an accounting service)"
		}
		return computeRequest{}, aerr
	}
	ne, callerDeadline, aerr := decodeEpoch(id, body)
	if aerr == nil && ne.Source != "" {
		if err := a.Outbound.CheckURL(ne.Source); err != nil {
			aerr = httpapi.BadRequest("invalid_source", "source", "source "+err.Error())
		}
	}
	if aerr != nil {
		return computeRequest{}, aerr
	}
	return computeRequest{epoch: ne, rerun: rerun, timeout: a.timeout(callerDeadline)}, nil
}

// epochStart is how compute starts an epoch's workflow.
type epochStart struct {
	epoch   store.Epoch
	timeout time.Duration // the workflow's execution timeout
	restart bool          // replace a run Temporal has not timed out yet
}

// runEpoch is compute's work once the request is read: it stores the epoch,
// or decides what becomes of the one stored under its id, and makes sure its
// workflow runs. started says the workflow was started (or joined) and the
// answer is 202; otherwise e is answered as it is stored, with 200.
func (a *API) runEpoch(ctx context.Context, req computeRequest) (e store.Epoch, started bool, aerr *httpapi.Error) {
	ne := req.epoch
	ne.Deadline = time.Now().Add(req.timeout)
	// The accept deadline runs from here: the body is read, and what is
	// left is keeper's own work and Temporal's acceptance.
	acceptTimeout := cmp.Or(a.Epochs.AcceptTimeout, DefaultAcceptTimeout)
	acceptCtx, cancel := context.WithTimeout(ctx, acceptTimeout)
	defer cancel()

	e, created, err := a.Store.CreateEpoch(ctx, ne, a.Epochs.MaxInFlight)
	if errors.Is(err, store.ErrBusy) {
		return e, false, a.busy(err)
	}
	if err != nil {
		return e, false, httpapi.Internal(a.Logger, "store epoch", err)
	}
	start := epochStart{epoch: e, timeout: req.timeout}
	if !created {
		var done bool
		if start, done, aerr = a.existingEpoch(ctx, e, ne, req.rerun, req.timeout); aerr != nil || done {
			return start.epoch, false, aerr
		}
	}
	if err := a.startEpoch(acceptCtx, start.epoch, start.timeout, start.restart); err != nil {
		var already *serviceerror.WorkflowExecutionAlreadyStarted
		if errors.As(err, &already) { // its run completed between our read and the start
			if e, err = a.Store.GetEpoch(ctx, ne.ID); err == nil {
				return e, false, nil
			}
		}
		a.Logger.Warn("api: start epoch workflow", "epoch", ne.ID, "error", err)
		msg := "the epoch is queued but its workflow could not be started; send the same request again to start it"
		if acceptCtx.Err() != nil && ctx.Err() == nil {
			msg = fmt.Sprintf("the epoch is queued but Temporal did not accept its workflow within %s; send the same request again to start it (or join it, if Temporal took it meanwhile)", acceptTimeout)
		}
		return e, false, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "temporal_unavailable", RetryAfter: epochRetryAfter, Message: msg}
	}
	if e, err = a.Store.GetEpoch(ctx, ne.ID); err != nil {
		return e, false, httpapi.Internal(a.Logger, "load epoch", err)
	}
	return e, true, nil
}

// existingEpoch decides what a compute request does with the epoch e stored
// under its id already: done answers e as it is; otherwise its workflow is
// started (a queued or computing epoch's within its own deadline, a re-run's
// replacing the last run).
func (a *API) existingEpoch(ctx context.Context, e store.Epoch, ne store.NewEpoch, rerun bool, timeout time.Duration) (start epochStart, done bool, aerr *httpapi.Error) {
	if e.RequestHash != ne.RequestHash {
		return epochStart{}, false, &httpapi.Error{Status: http.StatusConflict, Code: "epoch_conflict", Field: "id",
			Message: fmt.Sprintf("epoch %s exists with other inputs (request hash %s, this request's %s); an epoch's inputs never change", ne.ID, e.RequestHash, ne.RequestHash)}
	}
	switch e.Status {
	case store.EpochCompleted:
		if rerun {
			return epochStart{}, false, &httpapi.Error{Status: http.StatusConflict, Code: "epoch_completed", Field: "rerun",
				Message: fmt.Sprintf("epoch %s completed: every intent was acknowledged; a completed epoch never runs again", ne.ID)}
		}
		return epochStart{epoch: e}, true, nil
	case store.EpochQuarantined:
		// A quarantined epoch stays so, its intents not sent again,
		// until a re-run is asked for explicitly (?rerun=true).
		if !rerun {
			return epochStart{epoch: e}, true, nil
		}
		return a.restartEpoch(ctx, ne, timeout)
	case store.EpochFailed:
		return a.restartEpoch(ctx, ne, timeout)
	default: // queued or computing: make sure its workflow runs, within its own deadline
		return epochStart{epoch: e, timeout: time.Until(e.Deadline)}, false, nil
	}
}

// restartEpoch runs an ended epoch again. The same request again re-runs a
// failed epoch (a missed deadline, a source that was down for good), and
// ?rerun=true a quarantined one: intents are idempotent, so nothing is paid
// twice.
func (a *API) restartEpoch(ctx context.Context, ne store.NewEpoch, timeout time.Duration) (start epochStart, done bool, aerr *httpapi.Error) {
	e, err := a.Store.RestartEpoch(ctx, ne.ID, ne.RequestHash, ne.Deadline, a.Epochs.MaxInFlight)
	switch {
	case errors.Is(err, store.ErrBusy):
		return epochStart{}, false, a.busy(err)
	case errors.Is(err, store.ErrConflict): // restarted meanwhile by another request
		if e, err = a.Store.GetEpoch(ctx, ne.ID); err != nil {
			return epochStart{}, false, httpapi.Internal(a.Logger, "load epoch", err)
		}
		return epochStart{epoch: e, timeout: timeout}, false, nil
	case err != nil:
		return epochStart{}, false, httpapi.Internal(a.Logger, "restart epoch", err)
	}
	return epochStart{epoch: e, timeout: timeout, restart: true}, false, nil
}

// busy counts and answers a compute refused for the epochs in flight.
func (a *API) busy(err error) *httpapi.Error {
	a.epochMetrics.busy.WithLabelValues("compute").Inc()
	return &httpapi.Error{Status: http.StatusTooManyRequests, Code: "busy", RetryAfter: epochRetryAfter, Message: err.Error() + "; retry later"}
}

// startEpoch starts the epoch's workflow. The workflow id de-duplicates: a
// run in progress is used as it is, and a completed run is never started
// again (Temporal refuses; only a failed run may be followed by another). A
// restart, which the store decided (a failed epoch asked for again, a
// quarantined one re-run), replaces a run that Temporal has not timed out
// yet and follows any ended one: a quarantined epoch's run completed.
func (a *API) startEpoch(ctx context.Context, e store.Epoch, timeout time.Duration, restart bool) error {
	conflict, reuse := enums.WORKFLOW_ID_CONFLICT_POLICY_USE_EXISTING, enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE_FAILED_ONLY
	if restart {
		conflict, reuse = enums.WORKFLOW_ID_CONFLICT_POLICY_TERMINATE_EXISTING, enums.WORKFLOW_ID_REUSE_POLICY_ALLOW_DUPLICATE
	}
	opts := client.StartWorkflowOptions{
		ID:                       workflows.EpochWorkflowID(e.ID),
		TaskQueue:                workflows.EpochTaskQueue,
		WorkflowExecutionTimeout: timeout,
		WorkflowIDConflictPolicy: conflict,
		WorkflowIDReusePolicy:    reuse,
		TypedSearchAttributes:    temporal.NewSearchAttributes(workflows.SAStatus.ValueSet(store.EpochQueued)),
	}
	in := workflows.EpochInput{EpochID: e.ID, Run: e.Run, Policy: workflows.EpochPolicy{ActivityTimeout: timeout, Heartbeat: a.Epochs.Heartbeat}}
	_, err := a.Temporal.ExecuteWorkflow(ctx, opts, workflows.EpochCompute, in)
	return err
}

func (a *API) getEpoch(w http.ResponseWriter, r *http.Request) {
	id, aerr := epochID(r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	e, err := a.Store.GetEpoch(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Field: "id", Message: "no epoch " + id})
	case err != nil:
		httpapi.WriteError(w, httpapi.Internal(a.Logger, "load epoch", err))
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
			httpapi.WriteError(w, httpapi.Internal(a.Logger, "load the commitment's evidence", err))
			return
		}
		m.Anchor.Status = string(ev.Status)
		if ev.Status == store.StatusConfirmed {
			rc, err := ReceiptOf(r.Context(), a.Store, ev)
			if err != nil {
				httpapi.WriteError(w, httpapi.Internal(a.Logger, "build the commitment's receipt", err))
				return
			}
			m.Anchor.Receipt = &rc
			m.Links["receipt"] = "/v1/evidence/" + ev.ID + "/receipt"
		}
	}
	httpapi.WriteJSON(w, status, m)
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
