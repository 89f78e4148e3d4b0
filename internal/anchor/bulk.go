package anchor

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/store"
)

// Bulk intake: POST /v1/evidence/batch takes up to maxBatchItems evidence,
// each the body POST /v1/evidence takes, validates and answers each on its
// own (one 207 answer), and stores the valid ones in one store transaction.
const (
	maxBatchItems = 1000
	// DefaultMaxBatchBodyBytes is the batch's body limit unless configured:
	// maxBatchItems items, each with the largest metadata and 2 KiB for the
	// rest of its fields.
	DefaultMaxBatchBodyBytes = maxBatchItems * (maxMetadataBytes + 2<<10)
)

// batchRequest is the body of POST /v1/evidence/batch. Its items are
// decoded one by one, so one item's wrong type fails that item alone.
type batchRequest struct {
	Items []json.RawMessage `json:"items"`
}

// batchItem is one item's answer: an evidence (id, created, its status) or
// an error. It holds no more than the answer needs.
type batchItem struct {
	status   int
	id       string
	created  bool
	evStatus store.Status
	err      *httpapi.Error
}

func (h *HTTP) postEvidenceBatch(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	answered := h.intakeBatch(w, r)
	h.Metrics.intakeBatch(answered, time.Since(start))
	h.busy(answered[http.StatusTooManyRequests])
}

// intakeBatch answers a batch and says what it answered: how many items got
// each status, or the status of a batch refused whole.
func (h *HTTP) intakeBatch(w http.ResponseWriter, r *http.Request) map[int]int {
	fail := func(e *httpapi.Error) map[int]int {
		h.Metrics.refused(e)
		httpapi.WriteError(w, e)
		return map[int]int{e.Status: 1}
	}
	if h.Draining.Draining() {
		w.Header().Set("Retry-After", "5")
		return fail(&httpapi.Error{Status: http.StatusServiceUnavailable, Code: "draining", Message: "keeper is shutting down; retry against another node or later"})
	}
	if len(r.Header.Values(keyHeader)) > 0 {
		return fail(httpapi.BadRequest("invalid_idempotency_key", keyHeader, "POST /v1/evidence/batch takes an idempotency key per item (items[i].idempotency_key), not the Idempotency-Key header"))
	}
	limit := cmp.Or(h.MaxBatchBodyBytes, DefaultMaxBatchBodyBytes)
	body, aerr := httpapi.ReadJSONBody(w, r, limit)
	if aerr != nil {
		return fail(aerr)
	}
	items, nes, at, aerr := decodeBatch(body, h.Chains)
	if aerr != nil {
		return fail(aerr)
	}
	nes, at, admitted, aerr := h.refuseOverloaded(r, items, nes, at)
	if aerr != nil {
		return fail(aerr)
	}
	defer h.backlog.settle(admitted)
	for _, ne := range nes {
		h.Traces.Expect(r.Context(), ne.Digest, ne.Chains)
	}
	res, err := h.Store.InsertEvidenceBatch(r.Context(), nes)
	if err != nil {
		return fail(httpapi.Internal(h.Logger, "store evidence", err))
	}
	for k, in := range res {
		items[at[k]] = h.storedItem(at[k], in, nes[k])
	}
	for _, it := range items {
		if it.err != nil {
			h.Metrics.refused(it.err)
		}
	}
	return writeBatch(w, items)
}

// decodeBatch decodes a batch's body: an answer per item, with the error of
// each invalid one, and the evidence of the valid ones with the index of
// the item of each. An error refuses the batch whole. A body the scanner
// cannot read whole (evidencescan.go) goes to strictjson, and its items
// each to decodeItem.
func decodeBatch(body []byte, chains []string) (items []batchItem, nes []store.NewEvidence, at []int, aerr *httpapi.Error) {
	if utf8.Valid(body) {
		if items, nes, at, ok := scanBatch(body, chains); ok {
			return items, nes, at, nil
		}
	}
	var req batchRequest
	if aerr := httpapi.DecodeStrict(body, &req); aerr != nil {
		return nil, nil, nil, aerr
	}
	switch n := len(req.Items); {
	case n == 0:
		return nil, nil, nil, httpapi.BadRequest("missing_field", "items", fmt.Sprintf("items must list 1–%d evidence, each the body POST /v1/evidence takes", maxBatchItems))
	case n > maxBatchItems:
		return nil, nil, nil, httpapi.BadRequest("too_many_items", "items", fmt.Sprintf("items lists %d evidence; a request takes at most %d: send the rest in another", n, maxBatchItems))
	}

	items = make([]batchItem, len(req.Items))
	nes = make([]store.NewEvidence, 0, len(req.Items))
	at = make([]int, 0, len(req.Items)) // the item of each of nes
	for i, raw := range req.Items {
		ne, aerr := decodeItem(raw, chains, i)
		if aerr != nil {
			items[i].err = aerr
			continue
		}
		nes, at = append(nes, ne), append(at, i)
	}
	return items, nes, at, nil
}

// decodeItem validates items[i] as POST /v1/evidence validates its body.
func decodeItem(raw json.RawMessage, chains []string, i int) (store.NewEvidence, *httpapi.Error) {
	if len(raw) == 0 || raw[0] != '{' {
		name := itemName(i)
		return store.NewEvidence{}, httpapi.BadRequest("invalid_json", name, name+" must be a JSON object: the body POST /v1/evidence takes")
	}
	ne, aerr := decodeEvidence(raw, chains)
	if aerr != nil {
		return ne, itemError(i, aerr)
	}
	return ne, nil
}

func itemName(i int) string { return "items[" + strconv.Itoa(i) + "]" }

// itemError names items[i] in an error about one of its fields: the field
// becomes items[i].digest, and the message starts with that name.
func itemError(i int, e *httpapi.Error) *httpapi.Error {
	field := itemName(i)
	if e.Field != "" {
		field += "." + e.Field
	}
	msg := field + ": " + e.Message
	if rest, ok := strings.CutPrefix(e.Message, e.Field+" "); ok && e.Field != "" {
		msg = field + " " + rest // "digest must be …" reads "items[1].digest must be …"
	}
	return &httpapi.Error{Status: e.Status, Code: e.Code, Field: field, Message: msg, RetryAfter: e.RetryAfter}
}

// refuseOverloaded holds the batch to POST /v1/evidence's back-pressure
// (backlog.go), item by item, the most urgent first: an item refused is
// answered 429, unless its idempotency key was seen before (it answers the
// evidence stored then, as a repeat of the single POST does) or is an
// admitted item's (the store answers it). It returns the items still to be
// stored and how many were admitted, for h.backlog.settle once stored.
func (h *HTTP) refuseOverloaded(r *http.Request, items []batchItem, nes []store.NewEvidence, at []int) ([]store.NewEvidence, []int, int, *httpapi.Error) {
	order := make([]int, len(nes)) // nes by priority, then in the items' order
	for k := range order {
		order[k] = k
	}
	slices.SortStableFunc(order, func(x, y int) int { return nes[x].Priority - nes[y].Priority })
	priorities := make([]int, len(order))
	for k, o := range order {
		priorities[k] = nes[o].Priority
	}
	out, admitted, est, err := h.backlog.take(r.Context(), priorities)
	if err != nil {
		return nil, nil, 0, httpapi.Internal(h.Logger, "count pending evidence", err)
	}
	why := make([]refusal, len(nes))
	keys := map[string]bool{} // keys of the items admitted
	for k, o := range order {
		why[o] = out[k]
		if out[k] == "" && nes[o].IdempotencyKey != "" {
			keys[nes[o].IdempotencyKey] = true
		}
	}
	keep, keepAt := nes[:0], at[:0]
	for k, ne := range nes {
		i := at[k]
		if why[k] != "" && !keys[ne.IdempotencyKey] {
			if items[i], err = h.refusedItem(r.Context(), i, ne, why[k], est); err != nil {
				h.backlog.release(admitted)
				return nil, nil, 0, httpapi.Internal(h.Logger, "look up idempotency key", err)
			}
			continue
		}
		keep, keepAt = append(keep, ne), append(keepAt, i)
	}
	return keep, keepAt, admitted, nil
}

// refusedItem answers items[i], refused by back-pressure while est evidence
// are pending: with the evidence its idempotency key made before, or 429.
func (h *HTTP) refusedItem(ctx context.Context, i int, ne store.NewEvidence, why refusal, est int) (batchItem, error) {
	if ne.IdempotencyKey != "" {
		prev, err := h.Store.EvidenceByKey(ctx, ne.IdempotencyKey)
		if err == nil {
			return h.storedItem(i, store.Inserted{Evidence: prev}, ne), nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return batchItem{}, err
		}
	}
	return batchItem{err: itemError(i, h.refused(why, est, "priority"))}, nil
}

// storedItem is the answer to items[i] once the store has taken it.
func (h *HTTP) storedItem(i int, in store.Inserted, ne store.NewEvidence) batchItem {
	if in.Err != nil {
		return batchItem{err: itemError(i, httpapi.Internal(h.Logger, "store evidence", in.Err))}
	}
	status, aerr := storedStatus(in.Evidence, in.Created, ne)
	if aerr != nil {
		return batchItem{err: itemError(i, aerr)}
	}
	return batchItem{status: status, id: in.Evidence.ID, created: in.Created, evStatus: in.Evidence.Status}
}

// writeBatch answers 207 with one line per item and counts the items by
// status. The lines are written by hand: they hold only ids and statuses
// keeper made, and encoding/json's reflection over 1,000 items a request
// is most of what answering costs; an error, whose message may quote the
// client, goes through encoding/json.
func writeBatch(w http.ResponseWriter, items []batchItem) map[int]int {
	answered := map[int]int{}
	retryAfter := 0 // the longest of the items refused for now
	b := make([]byte, 0, 16+len(items)*96)
	b = append(b, "{\n  \"items\": ["...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		if it.err != nil {
			it.status = it.err.Status
		}
		answered[it.status]++
		b = append(b, "\n    {\"index\":"...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ",\"status\":"...)
		b = strconv.AppendInt(b, int64(it.status), 10)
		if it.err != nil {
			retryAfter = max(retryAfter, it.err.RetryAfter)
			e, _ := json.Marshal(it.err)
			b = append(b, ",\"error\":"...)
			b = append(b, e...)
			b = append(b, '}')
			continue
		}
		b = append(b, ",\"id\":\""...)
		b = append(b, it.id...)
		b = append(b, "\",\"created\":"...)
		b = strconv.AppendBool(b, it.created)
		b = append(b, ",\"evidence_status\":\""...)
		b = append(b, it.evStatus...)
		b = append(b, "\"}"...)
	}
	b = append(b, "\n  ]\n}\n"...)
	if retryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusMultiStatus)
	w.Write(b)
	return answered
}
