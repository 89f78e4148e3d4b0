package epoch

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"time"

	"go.temporal.io/sdk/client"

	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/receipts"
	"github.com/keeperhq/keeper/internal/settlement"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/urlpolicy"
)

// Records is the store as the epoch routes need it: epochs created,
// restarted and read, and the evidence that anchors a finished one's
// commitment with its receipt (*store.Store).
type Records interface {
	receipts.Rows
	CreateEpoch(ctx context.Context, ne store.NewEpoch, maxInFlight int) (store.Epoch, bool, error)
	RestartEpoch(ctx context.Context, id, requestHash string, deadline time.Time, maxInFlight int) (store.Epoch, error)
	GetEpoch(ctx context.Context, id string) (store.Epoch, error)
	GetEvidence(ctx context.Context, id string) (store.Evidence, error)
}

// Temporal is what compute asks of Temporal: to start (or join) an
// epoch's EpochCompute workflow. A Temporal client is one.
type Temporal interface {
	ExecuteWorkflow(ctx context.Context, options client.StartWorkflowOptions, workflow any, args ...any) (client.WorkflowRun, error)
}

// Options are the reward-epoch settings of the routes.
type Options struct {
	MaxInFlight int           // epochs queued or computing at once; beyond, 429
	Duration    time.Duration // epoch_duration: an epoch must finish within half of it
	Heartbeat   time.Duration // heartbeat timeout of the long epoch steps
	// AcceptTimeout is how long compute waits for Temporal to accept the
	// epoch's workflow before it answers 503 with Retry-After (0:
	// DefaultAcceptTimeout).
	AcceptTimeout time.Duration
}

// DefaultAcceptTimeout is compute's accept deadline unless configured
// (docs/epochs.md, "Rules": accept deadline).
const DefaultAcceptTimeout = 2 * time.Second

// DefaultMaxBodyBytes is a compute body's limit when HTTP sets none.
const DefaultMaxBodyBytes = 1 << 20

// HTTP serves the reward-epoch routes (docs/epochs.md): compute, which
// stores an epoch and starts its workflow, and the epoch's manifest; and,
// when Ledger is set, the built-in ledger's routes under /ledger/v1.
type HTTP struct {
	Store Records
	// Temporal starts the epochs' workflows (nil: compute answers 503
	// epochs_unavailable).
	Temporal Temporal
	Options  Options
	// Ledger, when set, is the built-in ledger, served under /ledger/v1.
	Ledger *settlement.Server
	// Outbound decides which sources callers may hand keeper; the zero
	// value allows only https to public addresses.
	Outbound urlpolicy.Policy
	// MaxBodyBytes is a compute body's limit (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
	Logger       *slog.Logger
	// Draining is the process's drain, shared with the API: while it
	// drains, compute answers 503 (nil: never).
	Draining *httpapi.Drain
	// Busy, when set, counts a compute refused for the epochs in flight
	// (the API's keeper_busy_rejections_total{endpoint="compute"}).
	Busy func()
}

const (
	epochRetryAfter = 5 // seconds
	epochPathPrefix = "/rewarder/epochs/"
)

// Routes adds the reward-epoch routes to rs and, when keeper runs the
// built-in ledger, the ledger's.
func (h *HTTP) Routes(rs *httpapi.Routes) {
	rs.Handle("/rewarder/epochs/{id}/compute", httpapi.Methods{"POST": h.computeEpoch})
	rs.Handle("/rewarder/epochs/{id}", httpapi.Methods{"GET": h.getEpoch})
	if h.Ledger != nil {
		rs.Handle("/ledger/v1/intents", httpapi.Methods{"POST": httpapi.JSONOnly(h.Ledger.PostIntent)})
		rs.Handle("/ledger/v1/intents/{key}", httpapi.Methods{"GET": h.Ledger.GetIntent})
		rs.Handle("/ledger/v1/epochs/{epoch}/intents", httpapi.Methods{"GET": h.Ledger.ListIntents})
	}
}

func (h *HTTP) computeEpoch(w http.ResponseWriter, r *http.Request) {
	req, aerr := h.readCompute(w, r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	e, started, aerr := h.runEpoch(r.Context(), req)
	switch {
	case aerr != nil:
		httpapi.WriteError(w, aerr)
	case started:
		w.Header().Set("Location", epochPathPrefix+req.epoch.ID)
		h.writeManifest(w, r, http.StatusAccepted, e)
	default:
		h.writeManifest(w, r, http.StatusOK, e)
	}
}

// computeRequest is a compute request, read and checked.
type computeRequest struct {
	epoch   store.NewEpoch // without its deadline, which runs from when the request is read
	rerun   bool           // ?rerun=true: run a quarantined epoch again
	timeout time.Duration  // the epoch's whole budget
}

// readCompute reads and checks a compute request; nothing is stored.
func (h *HTTP) readCompute(w http.ResponseWriter, r *http.Request) (computeRequest, *httpapi.Error) {
	if h.Draining.Draining() {
		return computeRequest{}, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "draining", RetryAfter: epochRetryAfter, Message: "keeper is shutting down; retry against another node or later"}
	}
	if h.Temporal == nil {
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
	body, aerr := httpapi.ReadJSONBody(w, r, cmp.Or(h.MaxBodyBytes, DefaultMaxBodyBytes))
	if aerr != nil {
		if aerr.Code == "body_too_large" {
			aerr.Field, aerr.Message = "usage", aerr.Message+"; send a usage list that large through source (the URL of an accounting service)"
		}
		return computeRequest{}, aerr
	}
	ne, callerDeadline, aerr := decodeEpoch(id, body)
	if aerr == nil && ne.Source != "" {
		if err := h.Outbound.CheckURL(ne.Source); err != nil {
			aerr = httpapi.BadRequest("invalid_source", "source", "source "+err.Error())
		}
	}
	if aerr != nil {
		return computeRequest{}, aerr
	}
	return computeRequest{epoch: ne, rerun: rerun, timeout: h.timeout(callerDeadline)}, nil
}

// timeout is an epoch's whole budget: half the epoch duration (docs/epochs.md),
// or the caller's deadline when that is sooner.
func (h *HTTP) timeout(callerDeadline time.Duration) time.Duration {
	t := h.Options.Duration / 2
	if callerDeadline > 0 && callerDeadline < t {
		t = callerDeadline
	}
	return t
}
