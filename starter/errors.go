package starter

import (
	"encoding/json"
	"net/http"
)

// apiError is every error the API answers: a stable code for programs and a
// message naming the field for people.
type apiError struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
	Archive string `json:"archive,omitempty"` // 410 archived: the receipts archive file holding the receipt
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
	writeJSON(w, e.Status, e)
}
