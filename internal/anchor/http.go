package anchor

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/idemkey"
	"github.com/keeperhq/keeper/internal/receipts"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/telemetry"
)

// Records is the store as the evidence routes need it: evidence taken in
// one at a time or in bulk, read back and listed, re-driven one by one or
// in bulk, the archive of evidence moved out by retention, when a chain
// last formed a batch (when a pending evidence's batch is due), the
// pending count intake admits against, each chain's anchoring progress
// (/readyz's detail) and what receipts are built from (*store.Store).
type Records interface {
	receipts.Rows
	InsertEvidence(ctx context.Context, ne store.NewEvidence) (store.Evidence, bool, error)
	InsertEvidenceBatch(ctx context.Context, nes []store.NewEvidence) ([]store.Inserted, error)
	EvidenceByKey(ctx context.Context, key string) (store.Evidence, error)
	GetEvidence(ctx context.Context, id string) (store.Evidence, error)
	ListEvidence(ctx context.Context, f store.ListFilter) ([]store.Evidence, string, error)
	RedriveEvidence(ctx context.Context, id string) (store.Evidence, []string, error)
	DeadLetters(ctx context.Context, f store.RedriveFilter) (store.RedriveResult, error)
	Redrive(ctx context.Context, f store.RedriveFilter) (store.RedriveResult, error)
	ArchivedIn(ctx context.Context, id string) (store.Archive, error)
	LastBatchAt(ctx context.Context, chain string) (time.Time, error)
	PendingCount(ctx context.Context) (int, error)
	Progress(ctx context.Context, chains []string) (map[string]store.ChainProgress, error)
}

// HTTP serves the evidence routes (docs/api.md): intake, one at a time or
// in bulk, under back-pressure (backlog.go); an evidence, its receipt and
// the list of them; the re-drive of dead letters, one evidence or in bulk.
// Intake stores in one transaction and never waits on Temporal: the
// dispatcher (Dispatcher) forms batches from what is pending.
type HTTP struct {
	Store  Records
	Chains []string // configured chain names
	// MaxPending is the pending evidence at which priority 6–10 is refused
	// (429 overloaded).
	MaxPending int
	// MaxBacklog is the ceiling of pending evidence: at it, priority 1–5
	// waits up to IntakeWait for room, then is refused with 429
	// (backlog.go). 0: DefaultBacklogFactor × MaxPending.
	MaxBacklog int
	IntakeWait time.Duration
	// MaxBodyBytes is a request body's limit (0: DefaultMaxBodyBytes);
	// MaxBatchBodyBytes is POST /v1/evidence/batch's (0:
	// DefaultMaxBatchBodyBytes).
	MaxBodyBytes      int64
	MaxBatchBodyBytes int64
	// Interval is each chain's anchor interval (nil: none), for when a
	// pending evidence's batch is due.
	Interval func(chain string) time.Duration
	Logger   *slog.Logger
	// Traces, when set, hands the span of each evidence taken in to the
	// dispatcher.
	Traces *telemetry.Traces
	// Metrics count intake's answers (nil: nothing counted).
	Metrics *IntakeMetrics
	// Draining, once started, makes intake answer 503 (nil: never); the
	// node shares the API's.
	Draining *httpapi.Drain
	// Busy, when set, counts an evidence refused for the pending queue
	// (the API's keeper_busy_rejections_total{endpoint="evidence"}).
	Busy func()

	backlog *backlog
}

// DefaultMaxBodyBytes is a request body's limit when HTTP sets none.
const DefaultMaxBodyBytes = 1 << 20

// Routes adds the evidence routes to rs, with intake's admission
// (backlog.go) as the settings now say.
func (h *HTTP) Routes(rs *httpapi.Routes) {
	ceiling := cmp.Or(h.MaxBacklog, DefaultBacklogFactor*h.MaxPending)
	h.backlog = newBacklog(h.Store.PendingCount, h.MaxPending, ceiling, h.IntakeWait)
	rs.Handle("/v1/evidence", httpapi.Methods{"POST": h.postEvidence, "GET": h.listEvidence})
	rs.Handle("/v1/evidence/batch", httpapi.Methods{"POST": h.postEvidenceBatch})
	rs.Handle("/v1/evidence/{id}", httpapi.Methods{"GET": h.getEvidence})
	rs.Handle("/v1/evidence/{id}/receipt", httpapi.Methods{"GET": h.getReceipt})
	rs.Handle("/v1/evidence/{id}/retry", httpapi.Methods{"POST": h.retryEvidence})
	rs.Handle("/v1/dead-letters/redrive", httpapi.Methods{"POST": h.redrive})
}

// readBody reads a JSON body of at most MaxBodyBytes, answering 415 for
// another content type, 413 beyond the limit and 408 for a body that stops
// arriving before the server's read timeout.
func (h *HTTP) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *httpapi.Error) {
	return httpapi.ReadJSONBody(w, r, cmp.Or(h.MaxBodyBytes, DefaultMaxBodyBytes))
}

// busy counts n evidence refused for the pending queue.
func (h *HTTP) busy(n int) {
	if h.Busy == nil {
		return
	}
	for range n {
		h.Busy()
	}
}

// Intake limits.
const (
	maxMetadataBytes = 16 << 10
	maxKeyLen        = 256
	defaultPriority  = 5
)

// decodeEvidence parses and validates an intake body against the configured
// chains. It is pure: nothing is stored until it succeeds. A body in the
// plain form the scanner reads is read by it; any other goes to strictjson.
func decodeEvidence(body []byte, chains []string) (store.NewEvidence, *httpapi.Error) {
	var f evidenceFields
	if !utf8.Valid(body) || !f.scanBody(body) {
		var req api.EvidenceRequest
		if err := httpapi.DecodeStrict(body, &req); err != nil {
			return store.NewEvidence{}, err
		}
		f = fieldsOf(&req, httpapi.GivenFields(body))
	}
	return f.evidence(chains)
}

// evidenceFields is an intake body's fields as decoded, from an
// api.EvidenceRequest or by the scanner (evidencescan.go): each optional field with whether it
// was given (and not null).
type evidenceFields struct {
	digest, content, key          []byte
	hasDigest, hasContent, hasKey bool
	chains                        [][]byte
	priority                      int
	hasPriority                   bool
	metadata                      []byte // as given; compacted once metadataChecked
	metadataChecked               bool   // metadata passed checkMetadata (the scan does that)
}

// fieldsOf are the evidenceFields of a body encoding/json decoded into req;
// given (givenFields) says which optional fields the body gave.
func fieldsOf(req *api.EvidenceRequest, given map[string]bool) evidenceFields {
	f := evidenceFields{
		digest: []byte(req.Digest), hasDigest: given["digest"],
		content: []byte(req.Content), hasContent: given["content"],
		key: []byte(req.IdempotencyKey), hasKey: given["idempotency_key"],
		priority: req.Priority, hasPriority: given["priority"],
		metadata: req.Metadata,
	}
	for _, c := range req.Chains {
		f.chains = append(f.chains, []byte(c))
	}
	return f
}

// evidence validates f against the configured chains.
func (f *evidenceFields) evidence(chains []string) (store.NewEvidence, *httpapi.Error) {
	var ne store.NewEvidence
	switch {
	case f.hasDigest && f.hasContent:
		return ne, httpapi.BadRequest("conflicting_fields", "digest", "give either digest or content, not both")
	case f.hasDigest:
		if len(f.digest) != hex.EncodedLen(sha256.Size) {
			return ne, httpapi.BadRequest("invalid_digest", "digest", "digest must be a SHA-256 digest: 64 hex characters")
		}
		if _, err := hex.Decode(ne.Digest[:], f.digest); err != nil {
			return ne, httpapi.BadRequest("invalid_digest", "digest", "digest must be a SHA-256 digest: 64 hex characters")
		}
	case f.hasContent:
		b := make([]byte, base64.StdEncoding.DecodedLen(len(f.content)))
		n, err := base64.StdEncoding.Decode(b, f.content)
		if err != nil {
			return ne, httpapi.BadRequest("invalid_content", "content", "content must be standard base64")
		}
		if n == 0 {
			return ne, httpapi.BadRequest("invalid_content", "content", "content must not be empty")
		}
		ne.Digest = sha256.Sum256(b[:n])
	default:
		return ne, httpapi.BadRequest("missing_field", "digest", "digest (hex SHA-256) or content (base64) is required")
	}

	if len(f.chains) == 0 {
		return ne, missingChains(chains)
	}
	var aerr *httpapi.Error
	if ne.Chains, aerr = pickChains(f.chains, chains); aerr != nil {
		return ne, aerr
	}

	ne.Priority = defaultPriority
	if f.hasPriority {
		if f.priority < 1 || f.priority > 10 {
			return ne, httpapi.BadRequest("invalid_priority", "priority", "priority must be an integer from 1 (highest) to 10")
		}
		ne.Priority = f.priority
	}
	if f.hasKey {
		k := string(f.key)
		if aerr := checkKey(k, "idempotency_key"); aerr != nil {
			return ne, aerr
		}
		ne.IdempotencyKey = k
	}
	if f.metadataChecked {
		ne.Metadata = f.metadata
		return ne, nil
	}
	ne.Metadata, aerr = checkMetadata(f.metadata)
	return ne, aerr
}

// missingChains answers evidence that lists no chain. Its example is a
// chain configured here, so that it works as given.
func missingChains(chains []string) *httpapi.Error {
	msg := `chains must list at least one chain, e.g. ["multi"] (every chain configured here)`
	if len(chains) > 0 {
		msg = fmt.Sprintf(`chains must list at least one chain, e.g. [%q] (configured: %s; "multi" means all)`, chains[0], strings.Join(chains, ", "))
	}
	return httpapi.BadRequest("missing_field", "chains", msg)
}

// pickChains is the sorted set of configured chains the listed ones ask
// for ("multi" asks for all), or why the list is refused: the first chain
// in it listed twice or not configured.
func pickChains(listed [][]byte, chains []string) ([]string, *httpapi.Error) {
	var small [8]bool
	var on []bool
	if len(chains) <= len(small) {
		on = small[:len(chains)]
	} else {
		on = make([]bool, len(chains))
	}
	for k, c := range listed {
		// Before the first refusal the chains listed are all different and
		// each configured or "multi", so this looks at few of them.
		for _, d := range listed[:k] {
			if bytes.Equal(c, d) {
				return nil, httpapi.BadRequest("duplicate_chain", "chains", fmt.Sprintf("chain %q is listed twice", httpapi.Printable(string(c))))
			}
		}
		if string(c) == "multi" {
			for i := range on {
				on[i] = true
			}
			continue
		}
		i := chainIndex(chains, c)
		if i < 0 {
			return nil, httpapi.BadRequest("unknown_chain", "chains", fmt.Sprintf("chain %q is not configured here (configured: %s; \"multi\" means all)", httpapi.Printable(string(c)), strings.Join(chains, ", ")))
		}
		on[i] = true
	}
	n := 0
	for _, o := range on {
		if o {
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	picked := make([]string, 0, n)
	for i, o := range on {
		if o {
			picked = append(picked, chains[i])
		}
	}
	sort.Strings(picked)
	return slices.Compact(picked), nil // a chain configured twice is asked for once
}

// chainIndex is the index of c in chains, or -1.
func chainIndex(chains []string, c []byte) int {
	for i, cc := range chains {
		if cc == string(c) {
			return i
		}
	}
	return -1
}

// checkMetadata checks the metadata given (nil when absent) and compacts it:
// nil for none.
func checkMetadata(md []byte) ([]byte, *httpapi.Error) {
	if len(md) == 0 || bytes.Equal(md, []byte("null")) {
		return nil, nil
	}
	if len(md) > maxMetadataBytes {
		return nil, httpapi.BadRequest("metadata_too_large", "metadata", fmt.Sprintf("metadata must be at most %d bytes of JSON", maxMetadataBytes))
	}
	if bytes.TrimSpace(md)[0] != '{' {
		return nil, httpapi.BadRequest("invalid_metadata", "metadata", "metadata must be a JSON object")
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, md); err != nil {
		return nil, httpapi.BadRequest("invalid_metadata", "metadata", "metadata must be a JSON object")
	}
	return compact.Bytes(), nil
}

// checkKey checks an idempotency key given in field (the body's
// idempotency_key or the Idempotency-Key header).
func checkKey(k, field string) *httpapi.Error {
	if k == "" || len(k) > maxKeyLen || !utf8.ValidString(k) || strings.ContainsFunc(k, isControl) {
		return httpapi.BadRequest("invalid_idempotency_key", field, fmt.Sprintf("%s must be 1–%d printable characters", field, maxKeyLen))
	}
	return nil
}

// keyHeader is the Idempotency-Key request header (IETF httpapi
// idempotency-key draft), the same as the body's idempotency_key.
const keyHeader = idemkey.Header

// headerKey takes the Idempotency-Key header into ne: the draft's form, a
// quoted Structured Field string, or the bare key (idemkey.Parse). Given in the body too, the
// two must be the same key.
func headerKey(h http.Header, ne *store.NewEvidence) *httpapi.Error {
	vs := h.Values(keyHeader)
	switch {
	case len(vs) == 0:
		return nil
	case len(vs) > 1:
		return httpapi.BadRequest("invalid_idempotency_key", keyHeader, "the Idempotency-Key header must be given once")
	}
	k, err := idemkey.Parse(vs[0])
	if err != nil {
		return httpapi.BadRequest("invalid_idempotency_key", keyHeader, err.Error())
	}
	if aerr := checkKey(k, keyHeader); aerr != nil {
		return aerr
	}
	if ne.IdempotencyKey != "" && ne.IdempotencyKey != k {
		return httpapi.BadRequest("conflicting_idempotency_key", keyHeader, "the Idempotency-Key header and the body's idempotency_key differ; give the key once, or the same key in both")
	}
	ne.IdempotencyKey = k
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func view(ev store.Evidence) api.Evidence {
	v := api.Evidence{
		ID: ev.ID, Status: string(ev.Status), Digest: hex.EncodeToString(ev.Digest[:]), Chains: ev.Chains, Priority: ev.Priority,
		IdempotencyKey: ev.IdempotencyKey, Metadata: ev.Metadata, Attempts: ev.Attempts, LastError: ev.LastError,
		CreatedAt: ev.CreatedAt, UpdatedAt: ev.UpdatedAt,
		Links: map[string]string{"self": "/v1/evidence/" + ev.ID},
	}
	if len(ev.Salt) > 0 {
		v.Salt = hex.EncodeToString(ev.Salt)
	}
	for _, a := range ev.Anchors {
		va := api.EvidenceAnchor{Chain: a.Chain, Status: string(a.Status), BatchID: a.BatchID, TxRef: a.TxRef, Block: a.Block}
		if a.Status == store.StatusConfirmed && a.BlockTime.UnixMilli() > 0 { // 0: the store's "unknown"
			va.BlockTime = a.BlockTime.UTC()
		}
		v.Anchors = append(v.Anchors, va)
	}
	if ev.Status == store.StatusConfirmed {
		v.Links["receipt"] = "/v1/evidence/" + ev.ID + "/receipt"
	}
	return v
}

// listView is an evidence as lists show it: without its salt and receipt,
// which only the evidence's own answers carry, so a list does not help
// anyone test guesses against the leaves of other clients' evidence.
func listView(ev store.Evidence) api.Evidence {
	v := view(ev)
	v.Salt, v.Receipt = "", nil
	return v
}

func (h *HTTP) postEvidence(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	code := h.intake(w, r, start)
	h.Metrics.intake(code, time.Since(start))
	if code == http.StatusTooManyRequests {
		h.busy(1)
	}
}

func (h *HTTP) intake(w http.ResponseWriter, r *http.Request, start time.Time) int {
	fail := func(e *httpapi.Error) int { h.Metrics.refused(e); httpapi.WriteError(w, e); return e.Status }
	if h.Draining.Draining() {
		w.Header().Set("Retry-After", "5")
		return fail(&httpapi.Error{Status: http.StatusServiceUnavailable, Code: "draining", Message: "keeper is shutting down; retry against another node or later"})
	}
	body, aerr := h.readBody(w, r)
	if aerr != nil {
		return fail(aerr)
	}
	ne, aerr := decodeEvidence(body, h.Chains)
	if aerr == nil {
		aerr = headerKey(r.Header, &ne)
	}
	if aerr != nil {
		return fail(aerr)
	}
	if ne.IdempotencyKey != "" {
		// A repeat answers with what was stored, even under backpressure.
		prev, err := h.Store.EvidenceByKey(r.Context(), ne.IdempotencyKey)
		switch {
		case err == nil && !sameRequest(prev, ne):
			return fail(keyConflict(prev))
		case err == nil:
			v := view(prev)
			if err := h.withReceipt(r.Context(), &v, prev); err != nil {
				return fail(httpapi.Internal(h.Logger, "build the receipt", err))
			}
			w.Header().Set("Location", "/v1/evidence/"+prev.ID)
			httpapi.WriteJSON(w, http.StatusOK, v)
			return http.StatusOK
		case !errors.Is(err, store.ErrNotFound):
			return fail(httpapi.Internal(h.Logger, "look up idempotency key", err))
		}
	}
	took := serverTiming{start: start, read: time.Since(start)}
	if aerr := h.admit(r.Context(), ne.Priority); aerr != nil {
		return fail(aerr)
	}
	took.admit = time.Since(start) - took.read
	defer h.backlog.settle(1)
	h.Traces.Expect(r.Context(), ne.Digest, ne.Chains)
	ev, created, err := h.Store.InsertEvidence(store.WithIntakeTiming(r.Context(), &took.store), ne)
	if err != nil {
		return fail(httpapi.Internal(h.Logger, "store evidence", err))
	}
	status, aerr := storedStatus(ev, created, ne)
	if aerr != nil {
		return fail(aerr)
	}
	v := view(ev)
	if err := h.withReceipt(r.Context(), &v, ev); err != nil {
		return fail(httpapi.Internal(h.Logger, "build the receipt", err))
	}
	w.Header().Set("Location", "/v1/evidence/"+ev.ID)
	w.Header().Set("Server-Timing", took.String())
	httpapi.WriteJSON(w, status, v)
	return status
}

// sameRequest reports whether a stored evidence is what ne asks for again:
// the request's fingerprint is its digest (given or hashed from content),
// chains, priority and metadata. The store keeps the metadata as the
// request gave it, compacted, so evidence stored before metadata counted
// compares the same way.
func sameRequest(ev store.Evidence, ne store.NewEvidence) bool {
	return ev.Digest == ne.Digest && ev.Priority == ne.Priority && slices.Equal(ev.Chains, ne.Chains) && sameMetadata(ev.Metadata, ne.Metadata)
}

// sameMetadata reports whether two compacted metadata objects (empty for
// none) are the same JSON value: the same bytes, or the same members in
// another order. Numbers compare as written (1 is not 1.0).
func sameMetadata(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	va, oka := decodeNumbers(a)
	vb, okb := decodeNumbers(b)
	return oka && okb && reflect.DeepEqual(va, vb)
}

// decodeNumbers decodes JSON keeping numbers as written.
func decodeNumbers(b []byte) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	return v, dec.Decode(&v) == nil
}

// storedStatus is the answer to ne once the store has taken it: 202 when it
// made ev, 200 when ne's idempotency key answered ev stored before, and 422
// when that evidence is not what ne asks for.
func storedStatus(ev store.Evidence, created bool, ne store.NewEvidence) (int, *httpapi.Error) {
	switch {
	case created:
		return http.StatusAccepted, nil
	case !sameRequest(ev, ne):
		return 0, keyConflict(ev)
	}
	return http.StatusOK, nil
}

// keyConflict refuses an idempotency key first used for another request:
// 422, as the IETF idempotency-key draft answers a key reused with another
// payload.
func keyConflict(prev store.Evidence) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusUnprocessableEntity, Code: "idempotency_conflict", Field: "idempotency_key",
		Message: fmt.Sprintf("idempotency_key was first used for evidence %s with a different digest, chains, priority or metadata; a different request needs a different key", prev.ID)}
}

// overloaded refuses priority 6–10 while n evidence are pending.
func overloaded(n, limit int, field string) *httpapi.Error {
	return &httpapi.Error{Status: http.StatusTooManyRequests, Code: "overloaded", Field: field, RetryAfter: backlogRetryAfter,
		Message: fmt.Sprintf("%d evidence are pending (limit %d): priority 6–10 is refused until the queue drains; priority 1–5 is still accepted up to KEEPER_MAX_BACKLOG", n, limit)}
}

// evidenceID validates the {id} path segment.
func evidenceID(r *http.Request) (string, *httpapi.Error) {
	id := r.PathValue("id")
	if len(id) != 27 || !strings.HasPrefix(id, "ev_") {
		return "", httpapi.BadRequest("invalid_id", "id", "evidence ids look like ev_ followed by 24 hex characters")
	}
	if _, err := hex.DecodeString(id[3:]); err != nil || strings.ToLower(id) != id {
		return "", httpapi.BadRequest("invalid_id", "id", "evidence ids look like ev_ followed by 24 hex characters")
	}
	return id, nil
}

// notFound is the answer for an evidence id the store does not hold: 410
// naming the receipts archive file when retention moved it there (docs/production.md,
// "Storage and retention"), else 404.
func (h *HTTP) notFound(ctx context.Context, id string) *httpapi.Error {
	arch, err := h.Store.ArchivedIn(ctx, id)
	if err == nil {
		return &httpapi.Error{Status: http.StatusGone, Code: "archived", Field: "id", Archive: arch.File, Instance: "/v1/evidence/" + id,
			Message: fmt.Sprintf("evidence %s was confirmed and moved to the receipts archive on %s: its receipt is in %s (keeper receipt --archive DIR %s reads it)",
				id, arch.CreatedAt.UTC().Format(time.RFC3339), arch.File, id)}
	}
	if !errors.Is(err, store.ErrNotFound) {
		return httpapi.Internal(h.Logger, "look up the receipts archive", err)
	}
	return &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Field: "id", Message: "no evidence " + id, Instance: "/v1/evidence/" + id}
}

func (h *HTTP) load(w http.ResponseWriter, r *http.Request) (store.Evidence, bool) {
	id, aerr := evidenceID(r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return store.Evidence{}, false
	}
	ev, err := h.Store.GetEvidence(r.Context(), id)
	if errors.Is(err, store.ErrNotFound) {
		httpapi.WriteError(w, h.notFound(r.Context(), id))
		return store.Evidence{}, false
	}
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "load evidence", err))
		return store.Evidence{}, false
	}
	return ev, true
}

func (h *HTTP) getEvidence(w http.ResponseWriter, r *http.Request) {
	ev, ok := h.load(w, r)
	if !ok {
		return
	}
	v := view(ev)
	if err := h.withReceipt(r.Context(), &v, ev); err != nil {
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "build the receipt", err))
		return
	}
	for i, an := range v.Anchors {
		if store.Status(an.Status) != store.StatusPending || an.BatchID != 0 {
			continue
		}
		due, err := h.batchDue(r.Context(), an.Chain)
		if err != nil {
			h.Logger.Warn("evidence: when is the next batch due", "chain", an.Chain, "error", err)
			continue
		}
		v.Anchors[i].BatchDueAt = due
	}
	httpapi.WriteJSON(w, http.StatusOK, v)
}

// batchDue is when the chain's next batch is due by its anchor interval: an
// interval after its previous batch, or now.
func (h *HTTP) batchDue(ctx context.Context, chain string) (time.Time, error) {
	now := time.Now().UTC()
	if h.Interval == nil || h.Interval(chain) <= 0 {
		return now, nil
	}
	last, err := h.Store.LastBatchAt(ctx, chain)
	if err != nil || last.IsZero() {
		return now, err
	}
	if due := last.Add(h.Interval(chain)).UTC(); due.After(now) {
		return due, nil
	}
	return now, nil
}

func (h *HTTP) getReceipt(w http.ResponseWriter, r *http.Request) {
	ev, ok := h.load(w, r)
	if !ok {
		return
	}
	if ev.Status != store.StatusConfirmed {
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusConflict, Code: "not_confirmed", Instance: "/v1/evidence/" + ev.ID, Message: fmt.Sprintf("evidence %s is %s; its receipt exists once it is confirmed", ev.ID, ev.Status)})
		return
	}
	rc, err := receipts.Of(r.Context(), h.Store, ev)
	if errors.Is(err, receipts.ErrAwaitingWitnesses) {
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusConflict, Code: "awaiting_witnesses", Instance: "/v1/evidence/" + ev.ID,
			Message: fmt.Sprintf("evidence %s is confirmed; %v", ev.ID, err)})
		return
	}
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "build the receipt", err))
		return
	}
	if r.URL.Query().Get("format") == "tlog-proof" {
		text, err := rc.TLogProof()
		if err != nil {
			httpapi.WriteError(w, &httpapi.Error{Status: http.StatusConflict, Code: "not_in_log", Instance: "/v1/evidence/" + ev.ID, Message: fmt.Sprintf("evidence %s: %v", ev.ID, err)})
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Content-Disposition", `attachment; filename="`+ev.ID+`.tlog-proof"`)
		_, _ = w.Write([]byte(text))
		return
	}
	w.Header().Set("Content-Disposition", `attachment; filename="`+ev.ID+`.receipt.json"`)
	httpapi.WriteJSON(w, http.StatusOK, rc)
}

func (h *HTTP) retryEvidence(w http.ResponseWriter, r *http.Request) {
	id, aerr := evidenceID(r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	ev, chains, err := h.Store.RedriveEvidence(r.Context(), id)
	for _, c := range chains {
		h.Metrics.redrove(c, 1)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpapi.WriteError(w, h.notFound(r.Context(), id))
	case errors.Is(err, store.ErrConflict):
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusConflict, Code: "not_dead_lettered", Instance: "/v1/evidence/" + id, Message: err.Error()})
	case err != nil:
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "retry evidence", err))
	default:
		httpapi.WriteJSON(w, http.StatusAccepted, view(ev))
	}
}

func (h *HTTP) listEvidence(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if aerr := httpapi.CheckParams(q, "status", "limit", "cursor"); aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	f := store.ListFilter{Status: store.Status(q.Get("status"))}
	if f.Status != "" && !f.Status.Valid() {
		httpapi.WriteError(w, httpapi.BadRequest("invalid_status", "status", "status must be one of pending, batched, submitted, confirmed, dead_letter"))
		return
	}
	var aerr *httpapi.Error
	if f.Limit, f.Cursor, aerr = httpapi.PageRequest(q); aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	evs, next, err := h.Store.ListEvidence(r.Context(), f)
	httpapi.WritePage(h.Logger, w, "list evidence", evs, next, err, listView)
}
