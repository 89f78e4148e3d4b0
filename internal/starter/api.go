// Package starter is keeper's front door: the HTTP API that serves every
// feature's routes (API.Features) behind what cuts across them: the bearer
// token, limits on concurrent requests, deadlines, traces, request metrics,
// /health, /readyz, /metrics, /openapi.json, the evidence log under /log/,
// the /verify page and the payload codec.
package starter

import (
	"context"
	"log/slog"
	"maps"
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

// Feature is a feature's HTTP side (anchor, backfill, epoch, webhook): its
// routes, which the API serves behind what cuts across them (auth, limits,
// deadlines, traces, metrics, health).
type Feature interface {
	Routes(rs *httpapi.Routes)
}

// ReadyDetailer is a Feature that adds members to /readyz's answer that
// inform but never fail readiness (anchor's "anchoring").
type ReadyDetailer interface {
	Feature
	ReadyDetail(ctx context.Context) map[string]any
}

// API serves keeper's HTTP endpoints.
type API struct {
	// Features are the features whose routes the API serves.
	Features []Feature
	// Draining is shared with the features' intake routes (nil: the API's
	// own).
	Draining *httpapi.Drain

	// Store is the store as /log/ reads it, unless Log is set.
	Store       logsvc.Source
	Checks      []Check
	Logger      *slog.Logger
	Auth        AuthOptions
	MaxInFlight int // concurrent requests per route group; default 256
	// LongRequestTimeout is how long the routes that may move megabytes
	// (longRoutes) have to read the request and write the answer, instead
	// of the server's read and write timeouts (0: DefaultLongRequestTimeout).
	LongRequestTimeout time.Duration

	// Registry is what /metrics serves; the API adds its own metrics to it.
	// Nil: a registry of the API's metrics alone.
	Registry *prometheus.Registry
	// Traces, when set, traces every request (but /health and /metrics).
	Traces *telemetry.Traces

	// Codec, when its Handler is set, serves the payload codec under /codec.
	Codec CodecOptions

	// Log serves the evidence log under /log/ (nil: logsvc.Handler over Store).
	Log http.Handler

	// VerifyNetworks names the endpoints /verify prefills (nil: none).
	VerifyNetworks verifypage.Networks

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
	a.metrics = newMetrics(a.Registry)
	// Every readiness cause is exported from the start, not only once
	// /readyz is first asked, so the degraded alert has a series to watch.
	for _, c := range a.Checks {
		a.metrics.degraded(c.Name, false)
	}
	a.metrics.degraded("draining", false)
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

func (a *API) health(w http.ResponseWriter, r *http.Request) { Health(w, r) }

func (a *API) ready(w http.ResponseWriter, r *http.Request) {
	Ready(a.Checks, a.drain().Draining, a.metrics.degraded, a.readyDetail)(w, r)
}

// readyDetail is what the features add to /readyz's answer (ReadyDetailer).
func (a *API) readyDetail(ctx context.Context) map[string]any {
	out := map[string]any{}
	for _, f := range a.Features {
		if d, ok := f.(ReadyDetailer); ok {
			maps.Copy(out, d.ReadyDetail(ctx))
		}
	}
	return out
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
// answer that inform but never fail readiness (the features'
// ReadyDetailer: anchor's "anchoring").
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
