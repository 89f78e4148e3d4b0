package anchor

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/store"
)

// Re-driving dead letters in bulk (docs/retries.md, job queue).

func (h *HTTP) redrive(w http.ResponseWriter, r *http.Request) {
	body, aerr := h.readBody(w, r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	var req api.RedriveRequest
	if aerr := httpapi.DecodeStrict(body, &req); aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	f, aerr := h.redriveFilter(req)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	if req.DryRun {
		res, err := h.Store.DeadLetters(r.Context(), f)
		if err != nil {
			httpapi.WriteError(w, httpapi.Internal(h.Logger, "dead letters", err))
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, redriveAnswer(true, res))
		return
	}
	res, err := h.Store.Redrive(r.Context(), f)
	for chain, n := range res.ByChain { // what moved before an error moved for good
		h.Metrics.redrove(chain, n)
	}
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "re-drive dead letters", err))
		return
	}
	if res.Anchors > 0 {
		h.Logger.Warn("dead-lettered evidence re-driven", "evidence", res.Evidence, "anchors", res.Anchors, "batches", len(res.Batches),
			"chain", req.Chain, "batch", req.Batch, "since", req.Since, "until", req.Until)
	}
	httpapi.WriteJSON(w, http.StatusAccepted, redriveAnswer(false, res))
}

// redriveFilter checks a re-drive request, naming the field at fault.
func (h *HTTP) redriveFilter(req api.RedriveRequest) (store.RedriveFilter, *httpapi.Error) {
	f := store.RedriveFilter{Chain: req.Chain, BatchID: req.Batch}
	if req.Chain != "" && !contains(h.Chains, req.Chain) {
		return f, httpapi.BadRequest("unknown_chain", "chain", fmt.Sprintf("chain %q is not configured here (configured: %s)", httpapi.Printable(req.Chain), strings.Join(h.Chains, ", ")))
	}
	if req.Batch < 0 {
		return f, httpapi.BadRequest("invalid_batch", "batch", "batch must be a batch id (1 or more)")
	}
	for _, t := range []struct {
		field, value string
		to           *time.Time
	}{{"since", req.Since, &f.Since}, {"until", req.Until, &f.Until}} {
		if t.value == "" {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, t.value)
		if err != nil {
			return f, httpapi.BadRequest("invalid_time", t.field, fmt.Sprintf("%s must be an RFC 3339 time such as 2026-01-02T15:04:05Z, not %q", t.field, httpapi.Printable(t.value)))
		}
		*t.to = at
	}
	if !f.Since.IsZero() && !f.Until.IsZero() && !f.Until.After(f.Since) {
		return f, httpapi.BadRequest("invalid_time_range", "until", "until must be later than since")
	}
	return f, nil
}

func redriveAnswer(dry bool, res store.RedriveResult) api.RedriveResult {
	v := api.RedriveResult{DryRun: dry, Evidence: res.Evidence, Anchors: res.Anchors, ByChain: res.ByChain,
		Batches: []api.RedriveBatch{}, EvidenceIDs: res.IDs, MoreIDs: res.Evidence > len(res.IDs)}
	if v.ByChain == nil {
		v.ByChain = map[string]int{}
	}
	if v.EvidenceIDs == nil {
		v.EvidenceIDs = []string{}
	}
	for _, b := range res.Batches {
		v.Batches = append(v.Batches, api.RedriveBatch{ID: b.ID, Chain: b.Chain, Evidence: b.Evidence,
			DeadLetteredAt: b.DeadLetteredAt.UTC(), LastError: b.LastError})
	}
	return v
}
