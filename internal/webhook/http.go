package webhook

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/urlpolicy"
)

// Subscriptions is the store as the webhook routes need it: subscriptions
// and their deliveries (*store.Store).
type Subscriptions interface {
	CreateWebhook(ctx context.Context, url string, events []string) (store.Webhook, error)
	GetWebhook(ctx context.Context, id string) (store.Webhook, error)
	ListWebhooks(ctx context.Context) ([]store.Webhook, error)
	RotateWebhookSecret(ctx context.Context, id string, grace time.Duration) (store.Webhook, error)
	EnableWebhook(ctx context.Context, id string) (store.Webhook, error)
	DeleteWebhook(ctx context.Context, id string) error
	ListDeliveries(ctx context.Context, subscriptionID string, limit int) ([]store.Delivery, error)
	RetryDelivery(ctx context.Context, subscriptionID, id string) (store.Delivery, error)
}

// HTTP serves the webhook routes (docs/webhooks.md): subscriptions, their
// deliveries and the re-drive of a failed one. The secret is in an answer
// only on creation and rotation (the new one; never the one it replaced).
type HTTP struct {
	Store  Subscriptions
	Logger *slog.Logger
	// Outbound decides which endpoint URLs callers may subscribe; the zero
	// value allows only https to public addresses.
	Outbound urlpolicy.Policy
	// RotationGrace is how long a secret replaced by rotate-secret keeps
	// signing when the request names no grace
	// (KEEPER_WEBHOOK_ROTATION_GRACE; 0: it stops at once).
	RotationGrace time.Duration
	// MaxBodyBytes is a request body's limit (0: DefaultMaxBodyBytes).
	MaxBodyBytes int64
}

// DefaultMaxBodyBytes is a request body's limit when HTTP sets none.
const DefaultMaxBodyBytes = 1 << 20

// Routes adds the webhook routes to rs.
func (h *HTTP) Routes(rs *httpapi.Routes) {
	rs.Handle("/v1/webhooks", httpapi.Methods{"POST": h.createWebhook, "GET": h.listWebhooks})
	rs.Handle("/v1/webhooks/{id}", httpapi.Methods{"GET": h.getWebhook, "DELETE": h.deleteWebhook})
	rs.Handle("/v1/webhooks/{id}/rotate-secret", httpapi.Methods{"POST": h.rotateWebhookSecret})
	rs.Handle("/v1/webhooks/{id}/enable", httpapi.Methods{"POST": h.enableWebhook})
	rs.Handle("/v1/webhooks/{id}/deliveries", httpapi.Methods{"GET": h.listWebhookDeliveries})
	rs.Handle("/v1/webhooks/{id}/deliveries/{delivery_id}/retry", httpapi.Methods{"POST": h.retryWebhookDelivery})
}

// readBody reads a JSON body of at most MaxBodyBytes.
func (h *HTTP) readBody(w http.ResponseWriter, r *http.Request) ([]byte, *httpapi.Error) {
	return httpapi.ReadJSONBody(w, r, cmp.Or(h.MaxBodyBytes, DefaultMaxBodyBytes))
}

func webhookOf(w store.Webhook) api.Webhook {
	return api.Webhook{
		ID: w.ID, URL: w.URL, Events: w.Events, Secret: w.Secret, Enabled: !w.Disabled,
		DisabledAt: httpapi.WireTime(w.DisabledAt), DisabledReason: w.DisabledReason,
		FailingSince: httpapi.WireTime(w.FailingSince), CreatedAt: httpapi.WireTime(w.CreatedAt),
		PreviousSecretExpiresAt: httpapi.WireTime(w.PreviousSecretUntil),
	}
}

// maxWebhookURL bounds a webhook URL's length.
const maxWebhookURL = 2048

func (h *HTTP) decodeWebhook(body []byte) (api.WebhookRequest, *httpapi.Error) {
	var nw api.WebhookRequest
	if aerr := httpapi.DecodeStrict(body, &nw); aerr != nil {
		return nw, aerr
	}
	switch {
	case nw.URL == "":
		return nw, httpapi.BadRequest("missing_field", "url", "url is required: the https URL keeper posts events to")
	case len(nw.URL) > maxWebhookURL:
		return nw, httpapi.BadRequest("invalid_url", "url", fmt.Sprintf("url is longer than %d bytes", maxWebhookURL))
	case len(nw.Events) == 0:
		return nw, httpapi.BadRequest("missing_field", "events", "events is required: one or more of "+strings.Join(store.EventTypes, ", "))
	}
	if err := h.Outbound.CheckURL(nw.URL); err != nil {
		return nw, httpapi.BadRequest("invalid_url", "url", "url "+err.Error())
	}
	seen := map[string]bool{}
	var events []string
	for i, e := range nw.Events {
		if !slices.Contains(store.EventTypes, e) {
			return nw, httpapi.BadRequest("invalid_event", "events["+strconv.Itoa(i)+"]",
				fmt.Sprintf("unknown event %q (known: %s)", httpapi.Printable(e), strings.Join(store.EventTypes, ", ")))
		}
		if !seen[e] {
			seen[e] = true
			events = append(events, e)
		}
	}
	nw.Events = events
	return nw, nil
}

func (h *HTTP) createWebhook(w http.ResponseWriter, r *http.Request) {
	body, aerr := h.readBody(w, r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	nw, aerr := h.decodeWebhook(body)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	wh, err := h.Store.CreateWebhook(r.Context(), nw.URL, nw.Events)
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "create webhook", err))
		return
	}
	w.Header().Set("Location", "/v1/webhooks/"+wh.ID)
	w.Header().Set("Cache-Control", "no-store")
	httpapi.WriteJSON(w, http.StatusCreated, webhookOf(wh))
}

func (h *HTTP) listWebhooks(w http.ResponseWriter, r *http.Request) {
	if aerr := httpapi.CheckParams(r.URL.Query()); aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	ws, err := h.Store.ListWebhooks(r.Context())
	if err != nil {
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "list webhooks", err))
		return
	}
	out := make([]api.Webhook, 0, len(ws))
	for _, wh := range ws {
		out = append(out, webhookOf(wh))
	}
	httpapi.WriteJSON(w, http.StatusOK, api.WebhookList{Webhooks: out})
}

// webhookID validates the {id} path segment.
func webhookID(r *http.Request) (string, *httpapi.Error) {
	id := r.PathValue("id")
	if !httpapi.ValidID(id, "wh_") {
		return "", httpapi.BadRequest("invalid_id", "id", "webhook ids look like wh_ followed by 24 hex characters")
	}
	return id, nil
}

func (h *HTTP) webhookAnswer(w http.ResponseWriter, id, what string, wh store.Webhook, err error, status int) {
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Field: "id", Message: "no webhook " + id})
	case err != nil:
		httpapi.WriteError(w, httpapi.Internal(h.Logger, what, err))
	default:
		if wh.Secret != "" {
			w.Header().Set("Cache-Control", "no-store")
		}
		httpapi.WriteJSON(w, status, webhookOf(wh))
	}
}

func (h *HTTP) getWebhook(w http.ResponseWriter, r *http.Request) {
	id, aerr := webhookID(r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	wh, err := h.Store.GetWebhook(r.Context(), id)
	h.webhookAnswer(w, id, "get webhook", wh, err, http.StatusOK)
}

// maxRotationGrace is the longest grace a rotation may ask for
// (config.MaxRotationGrace).
const maxRotationGrace = 7 * 24 * time.Hour

// rotationGrace reads rotate-secret's body; an empty body asks for the
// default grace.
func (h *HTTP) rotationGrace(body []byte) (time.Duration, *httpapi.Error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return h.RotationGrace, nil
	}
	var rot api.WebhookRotation
	if aerr := httpapi.DecodeStrict(body, &rot); aerr != nil {
		return 0, aerr
	}
	if !httpapi.GivenFields(body)["grace"] {
		return h.RotationGrace, nil
	}
	d, err := time.ParseDuration(rot.Grace)
	if err != nil || d < 0 || d > maxRotationGrace {
		return 0, httpapi.BadRequest("invalid_grace", "grace", "grace must be a duration such as \"1h\" or \"30m\", from \"0s\" (the old secret stops signing at once) to 168h")
	}
	return d, nil
}

func (h *HTTP) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) {
	id, aerr := webhookID(r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	body, aerr := h.readBody(w, r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	grace, aerr := h.rotationGrace(body)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	wh, err := h.Store.RotateWebhookSecret(r.Context(), id, grace)
	h.webhookAnswer(w, id, "rotate webhook secret", wh, err, http.StatusOK)
}

// enableWebhook enables a webhook disabled by failures or by a 410 answer.
func (h *HTTP) enableWebhook(w http.ResponseWriter, r *http.Request) {
	id, aerr := webhookID(r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	wh, err := h.Store.EnableWebhook(r.Context(), id)
	h.webhookAnswer(w, id, "enable webhook", wh, err, http.StatusOK)
}

func (h *HTTP) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	id, aerr := webhookID(r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	err := h.Store.DeleteWebhook(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Field: "id", Message: "no webhook " + id})
	case err != nil:
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "delete webhook", err))
	default:
		w.WriteHeader(http.StatusNoContent)
	}
}

func deliveryOf(d store.Delivery) api.Delivery {
	return api.Delivery{
		ID: d.ID, Type: d.Type, ObjectID: d.ObjectID, Status: d.Status, Attempts: d.Attempts,
		LastStatus: d.LastStatus, LastError: d.LastError,
		CreatedAt: httpapi.WireTime(d.CreatedAt), UpdatedAt: httpapi.WireTime(d.UpdatedAt), DeliveredAt: httpapi.WireTime(d.DeliveredAt),
	}
}

func (h *HTTP) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) {
	id, aerr := webhookID(r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	q := r.URL.Query()
	if aerr := httpapi.CheckParams(q, "limit"); aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	limit := 100
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > 1000 {
			httpapi.WriteError(w, httpapi.BadRequest("invalid_limit", "limit", "limit must be a whole number from 1 to 1000"))
			return
		}
		limit = n
	}
	ds, err := h.Store.ListDeliveries(r.Context(), id, limit)
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Field: "id", Message: "no webhook " + id})
		return
	case err != nil:
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "list webhook deliveries", err))
		return
	}
	out := make([]api.Delivery, 0, len(ds))
	for _, d := range ds {
		out = append(out, deliveryOf(d))
	}
	httpapi.WriteJSON(w, http.StatusOK, api.DeliveryList{Deliveries: out})
}

func (h *HTTP) retryWebhookDelivery(w http.ResponseWriter, r *http.Request) {
	id, aerr := webhookID(r)
	if aerr != nil {
		httpapi.WriteError(w, aerr)
		return
	}
	did := r.PathValue("delivery_id")
	if !httpapi.ValidID(did, "msg_") {
		httpapi.WriteError(w, httpapi.BadRequest("invalid_id", "delivery_id", "delivery ids look like msg_ followed by 24 hex characters"))
		return
	}
	d, err := h.Store.RetryDelivery(r.Context(), id, did)
	switch {
	case errors.Is(err, store.ErrNotFound):
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusNotFound, Code: "not_found", Field: "delivery_id", Message: "no delivery " + did + " of webhook " + id})
	case errors.Is(err, store.ErrConflict):
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusConflict, Code: "not_failed", Field: "delivery_id", Message: err.Error()})
	case err != nil:
		httpapi.WriteError(w, httpapi.Internal(h.Logger, "retry webhook delivery", err))
	default:
		httpapi.WriteJSON(w, http.StatusAccepted, deliveryOf(d))
	}
}
