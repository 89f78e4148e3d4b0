package starter

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// apiError is every error the API answers: a stable code for programs and a
// message naming the field for people.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Archive string `json:"archive,omitempty"` // 410 archived: the receipts archive file holding the receipt
	// RetryAfter, when positive, is the answer's Retry-After in seconds: a
	// 429 or 503 the same request may get past later.
	RetryAfter int `json:"-"`
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
	writeJSON(w, e.Status, e)
}
