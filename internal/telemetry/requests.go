package telemetry

import (
	"context"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// Traces traces API requests and carries the trace of each evidence taken in
// to the workflow that anchors it. Intake only writes the store; the
// dispatcher starts the batch's workflow later, so the request's span is
// remembered in memory, by chain and digest, until the dispatcher of this
// node starts the batch's workflow: the batch's span is then a child of its first
// traced evidence's request span and linked to the others'. (An evidence
// batched by another API node, or after a restart, starts a trace of its own
// at the dispatcher.) Methods on a nil *Traces do nothing.
type Traces struct {
	provider trace.TracerProvider

	mu         sync.Mutex
	pending    map[traceKey][]pendingSpan
	n          int
	lastPruned time.Time
}

type traceKey struct {
	chain  string
	digest [32]byte
}

type pendingSpan struct {
	sc trace.SpanContext
	at time.Time
}

// A remembered span is forgotten after pendingTraceTTL, and at most
// maxPendingTraces are held: beyond, new evidence is not linked.
const (
	pendingTraceTTL  = 10 * time.Minute
	maxPendingTraces = 100_000
	maxBatchLinks    = 128
)

// NewTraces traces with tp.
func NewTraces(tp trace.TracerProvider) *Traces {
	return &Traces{provider: tp, pending: map[traceKey][]pendingSpan{}}
}

// Middleware starts a server span per request (continuing a W3C traceparent
// the client sent), but for /health and /metrics.
func (t *Traces) Middleware(next http.Handler) http.Handler {
	if t == nil {
		return next
	}
	return otelhttp.NewHandler(next, "keeper-api",
		otelhttp.WithTracerProvider(t.provider),
		otelhttp.WithPropagators(Propagator),
		otelhttp.WithFilter(func(r *http.Request) bool { return r.URL.Path != "/health" && r.URL.Path != "/metrics" }),
		// Named after the route once the router has matched it (r.Pattern).
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return strings.TrimSpace(r.Method + " " + r.Pattern) }),
	)
}

// Route tags the request's span with its route and, for evidence taken in,
// with the evidence's id.
func (t *Traces) Route(pattern string, h http.Handler) http.Handler {
	if t == nil {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		span := trace.SpanFromContext(r.Context())
		span.SetAttributes(attribute.String("http.route", pattern))
		h.ServeHTTP(w, r)
		if loc := w.Header().Get("Location"); loc != "" && pattern == "/v1/evidence" {
			span.SetAttributes(attribute.String("keeper.evidence_id", path.Base(loc)))
		}
	})
}

// Expect remembers the span of the request in ctx for an evidence about to
// be stored: before the store, because intake's commit wakes the dispatcher,
// which may start the batch before the request is answered.
func (t *Traces) Expect(ctx context.Context, digest [32]byte, chainNames []string) {
	if t == nil {
		return
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsSampled() {
		return
	}
	now := time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n >= maxPendingTraces || now.Sub(t.lastPruned) > pendingTraceTTL {
		t.prune(now)
	}
	for _, c := range chainNames {
		if t.n >= maxPendingTraces {
			return
		}
		k := traceKey{c, digest}
		t.pending[k] = append(t.pending[k], pendingSpan{sc: sc, at: now})
		t.n++
	}
}

func (t *Traces) prune(now time.Time) {
	t.lastPruned = now
	for k, spans := range t.pending {
		i := 0
		for i < len(spans) && now.Sub(spans[i].at) > pendingTraceTTL {
			i++
		}
		t.n -= i
		if i == len(spans) {
			delete(t.pending, k)
		} else {
			t.pending[k] = spans[i:]
		}
	}
}

// take removes and returns the remembered spans of a batch's evidence, in
// leaf order.
func (t *Traces) take(chain string, digests [][]byte) []trace.SpanContext {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []trace.SpanContext
	for _, d := range digests {
		k := traceKey{chain: chain}
		copy(k.digest[:], d)
		spans := t.pending[k]
		if len(spans) == 0 {
			continue
		}
		out = append(out, spans[0].sc)
		t.n--
		if len(spans) == 1 {
			delete(t.pending, k)
		} else {
			t.pending[k] = spans[1:]
		}
	}
	return out
}

func (t *Traces) remembering() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n > 0
}

// Batch is what the span of a batch's start says of the batch. Digests reads
// its evidence's digests, in leaf order; it is called only while requests'
// spans are remembered.
type Batch struct {
	Chain   string
	ID      int64
	Size    int
	Digests func(context.Context) ([][]byte, error)
}

// StartBatch starts the span under which the dispatcher starts a batch's
// workflow; the Temporal interceptor continues it into the workflow. End it
// with the returned function.
func (t *Traces) StartBatch(ctx context.Context, b Batch) (context.Context, func()) {
	if t == nil {
		return ctx, func() {}
	}
	var traced []trace.SpanContext
	if t.remembering() {
		if digests, err := b.Digests(ctx); err == nil {
			traced = t.take(b.Chain, digests)
		}
	}
	opts := []trace.SpanStartOption{trace.WithAttributes(
		attribute.String("keeper.chain", b.Chain), attribute.Int64("keeper.batch_id", b.ID), attribute.Int("keeper.batch_size", b.Size),
	)}
	if len(traced) > 0 {
		ctx = trace.ContextWithSpanContext(ctx, traced[0])
		var links []trace.Link
		for _, sc := range traced[1:min(len(traced), maxBatchLinks+1)] {
			links = append(links, trace.Link{SpanContext: sc})
		}
		opts = append(opts, trace.WithLinks(links...))
	}
	ctx, span := t.provider.Tracer("github.com/keeperhq/keeper").Start(ctx, "dispatch batch", opts...)
	return ctx, func() { span.End() }
}
