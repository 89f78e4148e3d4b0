package starter

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/keeperhq/keeper/internal/problem"
)

// apiError is every error the API answers: a stable code for programs and a
// message naming the field for people. It is answered as RFC 9457 problem
// details (package problem), alone or, for a bulk item, inside the 207.
type apiError struct {
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
func (e *apiError) MarshalJSON() ([]byte, error) {
	p := problem.New(e.Status, e.Code, e.Message, e.Field)
	p.Instance, p.Archive = e.Instance, e.Archive
	return json.Marshal(p)
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func badRequest(code, field, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: code, Field: field, Message: msg}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	problem.Write(w, e.Status, e)
}
