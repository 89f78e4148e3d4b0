package settlement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/keeperhq/keeper/internal/idemkey"
	"github.com/keeperhq/keeper/internal/problem"
	"github.com/keeperhq/keeper/internal/rewards"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/strictjson"
)

const (
	maxIntentBody = 16 << 10
	maxKeyLen     = 255
	maxListLimit  = 10_000
)

// Intents is the store as the built-in ledger needs it: the intents it
// records and reads back (*store.Store).
type Intents interface {
	RecordLedgerIntents(ctx context.Context, lis []store.LedgerIntent) ([]store.IntentResult, error)
	LedgerIntent(ctx context.Context, key string) (store.LedgerIntent, error)
	LedgerIntents(ctx context.Context, epoch, afterAccount string, limit int) ([]store.LedgerIntent, error)
}

// Server is the built-in ledger: intents kept in keeper's store, idempotency
// keys enforced. Its handlers are mounted on keeper's API under /ledger/v1
// and served in-process to EmitIntents when no KEEPER_LEDGER_URL is set.
type Server struct {
	Store Intents

	commits committer
}

// Handler serves the ledger's routes on their own.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+intentsPath, s.PostIntent)
	mux.HandleFunc("GET "+intentsPath+"/{key}", s.GetIntent)
	mux.HandleFunc("GET /ledger/v1/epochs/{epoch}/intents", s.ListIntents)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &Error{Status: http.StatusNotFound, Code: "not_found", Message: r.Method + " " + r.URL.Path + " is not a ledger route"})
	})
	return mux
}

func recordOf(li store.LedgerIntent) Record {
	return Record{ID: li.ID, IdempotencyKey: li.IdempotencyKey, Epoch: li.Epoch, Account: li.Account, Amount: li.Amount, CreatedAt: li.CreatedAt}
}

// PostIntent records one intent under its Idempotency-Key, given bare or as
// the IETF draft's Structured Field string ("epoch-1-alice" names the same
// intent as epoch-1-alice).
func (s *Server) PostIntent(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get(KeyHeader) == "" {
		writeError(w, &Error{Status: http.StatusBadRequest, Code: "missing_idempotency_key", Field: KeyHeader, Message: "the Idempotency-Key header is required"})
		return
	}
	key, err := idemkey.Parse(r.Header.Get(KeyHeader))
	if err != nil {
		writeError(w, &Error{Status: http.StatusBadRequest, Code: "invalid_idempotency_key", Field: KeyHeader, Message: err.Error()})
		return
	}
	if key == "" || len(key) > maxKeyLen || strings.ContainsFunc(key, func(c rune) bool { return c < 0x21 || c > 0x7e }) {
		writeError(w, &Error{Status: http.StatusBadRequest, Code: "invalid_idempotency_key", Field: KeyHeader, Message: fmt.Sprintf("the Idempotency-Key must be 1–%d printable ASCII characters", maxKeyLen)})
		return
	}
	in, e := decodeIntent(r)
	if e != nil {
		writeError(w, e)
		return
	}
	res, err := s.record(store.LedgerIntent{IdempotencyKey: key, Epoch: in.Epoch, Account: in.Account, Amount: in.Amount})
	if err == nil {
		err = res.Err
	}
	li, replay := res.Intent, res.Replay
	switch {
	case errors.Is(err, store.ErrConflict):
		writeError(w, &Error{Status: http.StatusUnprocessableEntity, Code: "idempotency_key_reused", Field: KeyHeader,
			Message: fmt.Sprintf("Idempotency-Key %s was first used for %s %s in epoch %s; a different intent needs a different key", key, li.Account, li.Amount, li.Epoch)})
	case err != nil:
		writeError(w, &Error{Status: http.StatusInternalServerError, Code: "internal", Message: "store the intent: " + err.Error()})
	case replay:
		w.Header().Set(ReplayedHeader, "true")
		writeJSON(w, http.StatusOK, recordOf(li))
	default:
		writeJSON(w, http.StatusCreated, recordOf(li))
	}
}

func decodeIntent(r *http.Request) (Intent, *Error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxIntentBody+1))
	if err != nil {
		return Intent{}, &Error{Status: http.StatusBadRequest, Code: "invalid_body", Message: "could not read the body: " + err.Error()}
	}
	if len(body) > maxIntentBody {
		return Intent{}, &Error{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Message: fmt.Sprintf("an intent is at most %d bytes", maxIntentBody)}
	}
	var in Intent
	if e := strictjson.Decode(body, &in); e != nil {
		return Intent{}, &Error{Status: http.StatusBadRequest, Code: e.Code, Field: e.Field,
			Message: e.Message + `; an intent is one JSON object {"epoch", "account", "amount"} with string values`}
	}
	switch {
	case in.Epoch == "" || len(in.Epoch) > 64:
		return in, &Error{Status: http.StatusBadRequest, Code: "invalid_epoch", Field: "epoch", Message: "epoch must be 1–64 characters"}
	case !rewards.ValidAccount(in.Account):
		return in, &Error{Status: http.StatusBadRequest, Code: "invalid_account", Field: "account", Message: "account must be 1–128 printable ASCII characters without spaces"}
	}
	amount, err := rewards.ParseAmount(in.Amount)
	if err != nil {
		return in, &Error{Status: http.StatusBadRequest, Code: "invalid_amount", Field: "amount", Message: "amount must be a decimal string of integer minor units below 2^128"}
	}
	in.Amount = amount.String()
	return in, nil
}

// GetIntent answers the intent stored under a key.
func (s *Server) GetIntent(w http.ResponseWriter, r *http.Request) {
	li, err := s.Store.LedgerIntent(r.Context(), r.PathValue("key"))
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, &Error{Status: http.StatusNotFound, Code: "not_found", Field: "key", Message: "no intent under that idempotency key"})
	case err != nil:
		writeError(w, &Error{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()})
	default:
		writeJSON(w, http.StatusOK, recordOf(li))
	}
}

// IntentPage is a page of an epoch's intents, in account order.
type IntentPage struct {
	Items   []Record `json:"items"`
	Replays int      `json:"replays"` // repeated submissions the ledger answered from its records
	Next    string   `json:"next"`    // pass as ?after= for the next page; "" on the last
}

// ListIntents answers a page of an epoch's intents: ?after=<account>&limit=<n>.
func (s *Server) ListIntents(w http.ResponseWriter, r *http.Request) {
	limit := 1000
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxListLimit {
			writeError(w, &Error{Status: http.StatusBadRequest, Code: "invalid_limit", Field: "limit", Message: fmt.Sprintf("limit must be 1–%d", maxListLimit)})
			return
		}
		limit = n
	}
	items, err := s.Store.LedgerIntents(r.Context(), r.PathValue("epoch"), r.URL.Query().Get("after"), limit+1)
	if err != nil {
		writeError(w, &Error{Status: http.StatusInternalServerError, Code: "internal", Message: err.Error()})
		return
	}
	page := IntentPage{Items: []Record{}}
	if len(items) > limit {
		items = items[:limit]
		page.Next = items[limit-1].Account
	}
	for _, li := range items {
		page.Items = append(page.Items, recordOf(li))
		page.Replays += li.Replays
	}
	writeJSON(w, http.StatusOK, page)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// writeError answers e as RFC 9457 problem details, as keeper's API does.
func writeError(w http.ResponseWriter, e *Error) {
	w.Header().Set("Content-Type", problem.ContentType)
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(problem.New(e.Status, e.Code, e.Message, e.Field))
}
