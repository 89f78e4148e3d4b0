package api

import "fmt"

// Problem is every error answer of the API: RFC 9457 problem details
// (application/problem+json) with keeper's extension members code, message
// and field, which clients written for keeper's earlier {code, message,
// field} errors read unchanged, and archive with 410 "archived".
type Problem struct {
	// RFC 9457's members: Type names the problem
	// (tag:keeperhq.github.io,2026:problems/<code>), Title summarises it,
	// Status is the HTTP status (a bulk item's own), Detail is Message, and
	// Instance is the path it is about, when given.
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance,omitempty"`

	Code    string `json:"code"` // stable code, e.g. "invalid_digest" (the OpenAPI description lists them per answer)
	Message string `json:"message"`
	Field   string `json:"field,omitempty"` // the field, parameter or header at fault, if one is
	// Archive, with 410 "archived", is the receipts archive file holding the
	// evidence's receipt (retention moved the evidence there).
	Archive string `json:"archive,omitempty"`
}

func (p *Problem) Error() string {
	if p.Code == "" {
		return fmt.Sprintf("%s (HTTP %d)", p.Message, p.Status)
	}
	return fmt.Sprintf("%s (HTTP %d, %s)", p.Message, p.Status, p.Code)
}
