// Package httpapi is what keeper's HTTP routes share, whichever feature
// serves them: the JSON error every route answers (RFC 9457 problem
// details with a code and the field at fault), strict body and query
// reading, listing pages, and the route that answers 405 in JSON. The
// features (anchor, backfill, epoch, webhook) declare their routes with it;
// the node's HTTP server adds what cuts across them (auth, limits,
// deadlines, metrics, traces, health).
package httpapi

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/keeperhq/keeper/internal/problem"
)

// Error is every error the API answers: a stable code for programs and a
// message naming the field for people. It is answered as RFC 9457 problem
// details (package problem), alone or, for a bulk item, inside the 207.
type Error struct {
	Status   int
	Code     string
	Message  string
	Field    string
	Archive  string // 410 archived: the receipts archive file holding the receipt
	Instance string // the path the problem is about, where it helps
	// RetryAfter, when positive, is the answer's Retry-After in seconds: a
	// 429 or 503 the same request may get past later.
	RetryAfter int
}

// MarshalJSON writes e as problem details with code, message, field and
// archive as extension members.
func (e *Error) MarshalJSON() ([]byte, error) {
	p := problem.New(e.Status, e.Code, e.Message, e.Field)
	p.Instance, p.Archive = e.Instance, e.Archive
	return json.Marshal(p)
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// BadRequest is a 400 with its code, the field at fault ("" for the body
// as a whole) and a message for people.
func BadRequest(code, field, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Code: code, Field: field, Message: msg}
}

// WriteJSON answers v as indented JSON with status.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

// WriteError answers e as problem details, with Retry-After when it has one.
func WriteError(w http.ResponseWriter, e *Error) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	problem.Write(w, e.Status, e)
}
