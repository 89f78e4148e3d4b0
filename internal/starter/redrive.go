package starter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/store"
)

// Re-driving dead letters in bulk (docs/retries.md, job queue) and the
// anchoring ages /readyz shows.

// RedriveRecords is the store as re-drive and /readyz need it: dead
// letters, and each chain's anchoring progress.
type RedriveRecords interface {
	DeadLetters(ctx context.Context, f store.RedriveFilter) (store.RedriveResult, error)
	Redrive(ctx context.Context, f store.RedriveFilter) (store.RedriveResult, error)
	Progress(ctx context.Context, chains []string) (map[string]store.ChainProgress, error)
}

func (a *API) redrive(w http.ResponseWriter, r *http.Request) {
	body, aerr := a.readBody(w, r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	var req api.RedriveRequest
	if aerr := httpapi.DecodeStrict(body, &req); aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	f, aerr := a.redriveFilter(req)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	if req.DryRun {
		res, err := a.Store.DeadLetters(r.Context(), f)
		if err != nil {
			httpapi.WriteError(w, httpapi.Internal(a.Logger, "dead letters", err))
			return
		}
		httpapi.WriteJSON(w, http.StatusOK, redriveAnswer(true, res))
		return
	}
	res, err := a.Store.Redrive(r.Context(), f)
	for chain, n := range res.ByChain { // what moved before an error moved for good
		a.metrics.redriven.WithLabelValues(chain).Add(float64(n))
	}
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(a.Logger, "re-drive dead letters", err))
		return
	}
	if res.Anchors > 0 {
		a.Logger.Warn("dead-lettered evidence re-driven", "evidence", res.Evidence, "anchors", res.Anchors, "batches", len(res.Batches),
			"chain", req.Chain, "batch", req.Batch, "since", req.Since, "until", req.Until)
	}
	httpapi.WriteJSON(w, http.StatusAccepted, redriveAnswer(false, res))
}

// redriveFilter checks a re-drive request, naming the field at fault.
func (a *API) redriveFilter(req api.RedriveRequest) (store.RedriveFilter, *httpapi.Error) {
	f := store.RedriveFilter{Chain: req.Chain, BatchID: req.Batch}
	if req.Chain != "" && !contains(a.Chains, req.Chain) {
		return f, httpapi.BadRequest("unknown_chain", "chain", fmt.Sprintf("chain %q is not configured here (configured: %s)", httpapi.Printable(req.Chain), strings.Join(a.Chains, ", ")))
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

// anchoringView is one chain's entry under /readyz's "anchoring": the ages
// an operator watches now that transient failures are retried without end.
// It informs; it never makes the node unready (an RPC outage must not stop
// intake: the evidence waits and is anchored when the chain is back).
type anchoringView struct {
	OldestUnconfirmedAge float64 `json:"oldest_unconfirmed_age_seconds"`
	LastSuccessAt        string  `json:"last_success_at,omitempty"`
	LastSuccessAge       float64 `json:"last_success_age_seconds,omitempty"`
}

// anchoring is /readyz's detail of each configured chain's progress, or
// what kept it from being read.
func (a *API) anchoring(ctx context.Context) any {
	progress, err := a.Store.Progress(ctx, a.Chains)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return map[string]string{"error": "reading the anchoring progress timed out"}
		}
		return map[string]string{"error": "could not read the anchoring progress"}
	}
	now := time.Now()
	out := make(map[string]anchoringView, len(progress))
	for chain, p := range progress {
		v := anchoringView{OldestUnconfirmedAge: ageSeconds(now, p.OldestUnconfirmed)}
		if !p.LastConfirmed.IsZero() {
			v.LastSuccessAt = p.LastConfirmed.UTC().Format(time.RFC3339Nano)
			v.LastSuccessAge = ageSeconds(now, p.LastConfirmed)
		}
		out[chain] = v
	}
	return out
}
