// Package starter is keeper's front door: the HTTP API that takes evidence in
// (one store transaction, never waiting on Temporal) and the dispatcher that
// turns stored evidence into AnchorBatch workflows.
package starter

import (
	"cmp"
	"context"
	"log/slog"
	"net/http"
	"path"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/logsvc"
	"github.com/keeperhq/keeper/internal/telemetry"
	"github.com/keeperhq/keeper/internal/verifypage"
)

// Check is one readiness dependency (store, Temporal, a chain).
type Check struct {
	Name string
	Ping func(context.Context) error
}

// Records is the store as the API needs it, a part per feature, each
// declared beside its routes (*store.Store).
type Records interface {
	EvidenceRecords // anchor.go
	RedriveRecords  // redrive.go
	Counts          // metrics.go
	logsvc.Source   // /log/, unless Log is set
}

// Feature is a feature's HTTP side (anchor, backfill, epoch, webhook): its
// routes, which the API serves behind what cuts across them (auth, limits,
// deadlines, traces, metrics, health).
type Feature interface {
	Routes(rs *httpapi.Routes)
}

// API serves keeper's HTTP endpoints.
type API struct {
	// Features are the features whose routes the API serves.
	Features []Feature
	// Draining is shared with the features' intake routes (nil: the API's
	// own).
	Draining *httpapi.Drain

	Store        Records
	Chains       []string // configured chain names
	MaxPending   int
	MaxBodyBytes int64
	Checks       []Check
	Logger       *slog.Logger
	Auth         AuthOptions
	MaxInFlight  int // concurrent requests per route group; default 256
	// MaxBatchBodyBytes is POST /v1/evidence/batch's body limit (0:
	// DefaultMaxBatchBodyBytes).
	MaxBatchBodyBytes int64
	// LongRequestTimeout is how long the routes that may move megabytes
	// (longRoutes) have to read the request and write the answer, instead
	// of the server's read and write timeouts (0: DefaultLongRequestTimeout).
	LongRequestTimeout time.Duration
	// AnchorInterval is each chain's anchor interval (nil: none), for when
	// a pending evidence's batch is due.
	AnchorInterval func(chain string) time.Duration

	// MaxBacklog is the ceiling of pending evidence: at it, priority 1–5
	// waits up to IntakeWait for room, then is refused with 429 (backlog.go).
	// 0: DefaultBacklogFactor × MaxPending.
	MaxBacklog int
	IntakeWait time.Duration

	// Registry is what /metrics serves; the API adds its own metrics to it.
	// Nil: a registry of the API's metrics alone.
	Registry *prometheus.Registry
	// Traces, when set, traces every request (but /health and /metrics)
	// and hands the span of each evidence taken in to the dispatcher.
	Traces *telemetry.Traces

	// Codec, when its Handler is set, serves the payload codec under /codec.
	Codec CodecOptions

	// Log serves the evidence log under /log/ (nil: logsvc.Handler over Store).
	Log http.Handler

	// VerifyNetworks names the endpoints /verify prefills (nil: none).
	VerifyNetworks verifypage.Networks

	backlog *backlog
	metrics *metrics
}

// Drain makes readiness false and intake answer 503; reads keep working.
func (a *API) Drain() {
	if a.Draining == nil {
		a.Draining = &httpapi.Drain{}
	}
	a.Draining.Start()
}

// drain is the API's Draining, which Handler makes when none was given.
func (a *API) drain() *httpapi.Drain { return a.Draining }

// Handler returns the API's routes.
func (a *API) Handler() http.Handler {
	if a.Draining == nil {
		a.Draining = &httpapi.Drain{}
	}
	a.metrics = newMetrics(a.Registry, a.Store, a.Chains)
	// Every readiness cause is exported from the start, not only once
	// /readyz is first asked, so the degraded alert has a series to watch.
	for _, c := range a.Checks {
		a.metrics.degraded(c.Name, false)
	}
	a.metrics.degraded("draining", false)
	ceiling := cmp.Or(a.MaxBacklog, DefaultBacklogFactor*a.MaxPending)
	a.backlog = newBacklog(a.Store.PendingCount, a.MaxPending, ceiling, a.IntakeWait)
	mux := http.NewServeMux()
	for _, r := range a.routes() {
		mux.Handle(r.Pattern, a.Traces.Route(r.Pattern, a.deadlines(r.Pattern, r)))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Message: "no such route: " + httpapi.Printable(r.URL.Path)})
	})
	return a.Traces.Middleware(a.recoverer(cleanPaths(a.codecCORS(a.guard(mux)))))
}

// routes is the route table, as configured (codec routes only where
// enabled), with the features'. openapi.json describes every route.
func (a *API) routes() []httpapi.Route {
	routes := []httpapi.Route{
		{Pattern: "/openapi.json", Methods: httpapi.Methods{"GET": serveOpenAPI}},
		{Pattern: "/health", Methods: httpapi.Methods{"GET": a.health}},
		{Pattern: "/readyz", Methods: httpapi.Methods{"GET": a.ready}},
		{Pattern: "/metrics", Methods: httpapi.Methods{"GET": promhttp.HandlerFor(a.metrics.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP}},
		{Pattern: "/v1/evidence", Methods: httpapi.Methods{"POST": a.postEvidence, "GET": a.listEvidence}},
		{Pattern: "/v1/evidence/batch", Methods: httpapi.Methods{"POST": a.postEvidenceBatch}},
		{Pattern: "/v1/evidence/{id}", Methods: httpapi.Methods{"GET": a.getEvidence}},
		{Pattern: "/v1/evidence/{id}/receipt", Methods: httpapi.Methods{"GET": a.getReceipt}},
		{Pattern: "/v1/evidence/{id}/retry", Methods: httpapi.Methods{"POST": a.retryEvidence}},
		{Pattern: "/v1/dead-letters/redrive", Methods: httpapi.Methods{"POST": a.redrive}},
		{Pattern: "/verify", Methods: httpapi.Methods{"GET": verifypage.Handler(a.VerifyNetworks).ServeHTTP}},
	}
	routes = append(routes, a.logRoutes()...)
	for _, f := range a.Features {
		var rs httpapi.Routes
		f.Routes(&rs)
		routes = append(routes, rs.List()...)
	}
	return append(routes, a.codecRoutes()...)
}

// logRoutes serve the evidence log as C2SP tlog-tiles (docs/log.md): public,
// like the chains it is anchored on.
func (a *API) logRoutes() []httpapi.Route {
	h := a.Log
	if h == nil {
		h = logsvc.Handler(a.Store)
	}
	get := httpapi.Methods{"GET": h.ServeHTTP}
	var out []httpapi.Route
	for _, p := range []string{"/log/checkpoint", "/log/key", "/log/trust", "/log/anchors", "/log/anchors.json", "/log/checkpoints/{size}", "/log/tile/{path...}"} {
		out = append(out, httpapi.Route{Pattern: p, Methods: get})
	}
	return out
}

// cleanPaths answers paths with "..", "." or "//" segments with a JSON 400
// instead of the router's redirect, so a path trick never reaches a handler.
func cleanPaths(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p == "" || p[0] != '/' || path.Clean(p) != p && path.Clean(p)+"/" != p {
			httpapi.WriteError(w, httpapi.BadRequest("invalid_path", "", "the request path must be clean (no \"..\", \".\" or empty segments)"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (a *API) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				a.Logger.Error("api: handler panicked", "path", r.URL.Path, "panic", v)
				httpapi.WriteError(w, &httpapi.Error{Status: http.StatusInternalServerError, Code: "internal", Message: "internal error"})
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// readBody reads a JSON body of at most MaxBodyBytes, answering 415 for
// another content type, 413 beyond the limit and 408 for a body that stops
// arriving before the server's read timeout.
func (a *API) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *httpapi.Error) {
	return httpapi.ReadJSONBody(w, r, a.MaxBodyBytes)
}

func (a *API) health(w http.ResponseWriter, r *http.Request) { Health(w, r) }

func (a *API) ready(w http.ResponseWriter, r *http.Request) {
	Ready(a.Checks, a.drain().Draining, a.metrics.degraded, func(ctx context.Context) map[string]any {
		return map[string]any{"anchoring": a.anchoring(ctx)}
	})(w, r)
}

// Health answers /health: the process is up.
func Health(w http.ResponseWriter, _ *http.Request) {
	httpapi.WriteJSON(w, http.StatusOK, map[string]any{"status": "ok"})
}

// Ready answers /readyz: 200 when every check passes, else 503 naming each
// check's answer; 503 too while draining reports true. Every keeper process
// serves it, the API's on its address, `keeper worker`'s on
// KEEPER_HEALTH_ADDR. observe, when not nil, hears each cause's outcome
// (keeper_readyz_degraded); detail, when not nil, adds members to the
// answer that inform but never fail readiness (the API's "anchoring").
func Ready(list []Check, draining func() bool, observe func(cause string, failing bool), detail func(context.Context) map[string]any) http.HandlerFunc {
	if observe == nil {
		observe = func(string, bool) {}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 3*time.Second)
		defer cancel()
		checks := map[string]string{}
		ok := !draining()
		if !ok {
			checks["draining"] = "shutting down"
		}
		observe("draining", !ok)
		for _, c := range list {
			if err := c.Ping(ctx); err != nil {
				checks[c.Name] = err.Error()
				ok = false
			} else {
				checks[c.Name] = "ok"
			}
			observe(c.Name, checks[c.Name] != "ok")
		}
		status := http.StatusOK
		if !ok {
			status = http.StatusServiceUnavailable
		}
		answer := map[string]any{"ready": ok, "checks": checks}
		if detail != nil {
			for k, v := range detail(ctx) {
				answer[k] = v
			}
		}
		httpapi.WriteJSON(w, status, answer)
	}
}
