// Package problem is how keeper's HTTP servers answer errors: RFC 9457
// problem details (application/problem+json) whose type names a stable
// code, with that code, the message and the field at fault kept as extension
// members (code, message, field), so clients written for keeper's earlier
// {code, message, field} errors read them unchanged. Its one import of
// keeper's is the wire type, api.Problem.
package problem

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/keeperhq/keeper/api"
)

// ContentType is the media type of a problem answer.
const ContentType = "application/problem+json"

// TypePrefix starts every problem type keeper answers: the type of code c is
// TypePrefix + c. It is a tag URI (RFC 4151): a stable name, not a page to
// fetch; the API's OpenAPI description lists the codes of each answer.
const TypePrefix = "tag:keeperhq.github.io,2026:problems/"

// Details is one problem: the API's wire type (RFC 9457's members, then
// keeper's), declared once in package api for the server and the Go client.
type Details = api.Problem

// New is the problem of code with HTTP status and a message for people
// that names field (when one is at fault).
func New(status int, code, message, field string) Details {
	return Details{Type: TypePrefix + code, Title: Title(code), Status: status, Detail: message, Code: code, Message: message, Field: field}
}

// Title is the short summary of code's problem type, the same for every
// occurrence: "invalid_digest" is "Invalid digest".
func Title(code string) string {
	t := strings.ReplaceAll(code, "_", " ")
	if t == "" {
		return ""
	}
	return strings.ToUpper(t[:1]) + t[1:]
}

// Write answers v (Details, or a type embedding it) with its status.
func Write(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
