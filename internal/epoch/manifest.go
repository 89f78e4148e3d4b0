package epoch

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/receipts"
	"github.com/keeperhq/keeper/internal/store"
)

func (h *HTTP) getEpoch(w http.ResponseWriter, r *http.Request) {
	id, aerr := epochID(r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	e, err := h.Store.GetEpoch(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Field: "id", Message: "no epoch " + id})
	case err != nil:
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "load epoch", err))
	default:
		h.writeManifest(w, r, http.StatusOK, e)
	}
}

// writeManifest answers an epoch's manifest: its status, hashes, artifacts,
// intents and timings, and the evidence that anchors its commitment with
// that evidence's receipt once it is confirmed.
func (h *HTTP) writeManifest(w http.ResponseWriter, r *http.Request, status int, e store.Epoch) {
	m := manifestOf(e)
	if e.EvidenceID != "" {
		m.Anchor = &api.EpochAnchor{EvidenceID: e.EvidenceID}
		m.Links["evidence"] = "/v1/evidence/" + e.EvidenceID
		ev, err := h.Store.GetEvidence(r.Context(), e.EvidenceID)
		if err != nil {
			httpapi.WriteError(w, httpapi.Internal(h.Logger, "load the commitment's evidence", err))
			return
		}
		m.Anchor.Status = string(ev.Status)
		if ev.Status == store.StatusConfirmed {
			rc, err := receipts.Of(r.Context(), h.Store, ev)
			switch {
			case errors.Is(err, receipts.ErrAwaitingWitnesses): // the manifest shows it once the witnesses cosigned
			case err != nil:
				httpapi.WriteError(w, httpapi.Internal(h.Logger, "build the commitment's receipt", err))
				return
			default:
				m.Anchor.Receipt = &rc
				m.Links["receipt"] = "/v1/evidence/" + ev.ID + "/receipt"
			}
		}
	}
	httpapi.WriteJSON(w, status, m)
}

// manifestOf is the manifest of e as it is stored, without its anchor.
func manifestOf(e store.Epoch) api.Manifest {
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
	return m
}
