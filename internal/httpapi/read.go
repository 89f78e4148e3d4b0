package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/internal/strictjson"
)

// ReadJSONBody reads a JSON body of at most limit bytes, answering 415 for
// another content type, 413 beyond the limit and 408 for a body that stops
// arriving before the server's read timeout.
func ReadJSONBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *Error) {
	if aerr := JSONContent(r); aerr != nil {
		return nil, aerr
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var tooBig *http.MaxBytesError
	var netErr net.Error
	switch {
	case errors.As(err, &tooBig):
		return nil, &Error{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Message: "request body is larger than the limit of " + strconv.FormatInt(limit, 10) + " bytes"}
	case errors.As(err, &netErr) && netErr.Timeout():
		return nil, &Error{Status: http.StatusRequestTimeout, Code: "body_timeout", Message: "the request body did not arrive within the server's read timeout"}
	case err != nil:
		return nil, BadRequest("invalid_body", "", "could not read the request body: "+err.Error())
	}
	return body, nil
}

// JSONContent refuses a body declared as anything but JSON in UTF-8. A web
// page can make a browser send text/plain or a form to keeper without asking
// first (no CORS preflight), so such bodies are never read; a body without a
// Content-Type is taken as JSON.
func JSONContent(r *http.Request) *Error {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return nil
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) && (params["charset"] == "" || strings.EqualFold(params["charset"], "utf-8")) {
		return nil
	}
	return &Error{Status: http.StatusUnsupportedMediaType, Code: "unsupported_media_type", Field: "Content-Type",
		Message: fmt.Sprintf("the body must be JSON in UTF-8, sent as Content-Type: application/json, not %q", Printable(ct))}
}

// JSONOnly checks the Content-Type before h reads the body.
func JSONOnly(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if aerr := JSONContent(r); aerr != nil {
			WriteError(w, aerr)
			return
		}
		h(w, r)
	}
}

// DecodeStrict decodes one JSON object, refusing unknown fields, wrong types
// and trailing data, with an error that names the field.
func DecodeStrict(body []byte, v any) *Error {
	if err := strictjson.Decode(body, v); err != nil {
		return BadRequest(err.Code, err.Field, err.Message)
	}
	return nil
}

// GivenFields names the fields a body DecodeStrict accepted gives a value
// other than null: the requests' optional fields, whose absence asks for a
// default, are told apart from their zero values by it.
func GivenFields(body []byte) map[string]bool {
	var raw map[string]json.RawMessage
	if json.Unmarshal(body, &raw) != nil {
		return nil
	}
	given := make(map[string]bool, len(raw))
	for k, v := range raw {
		given[k] = string(v) != "null"
	}
	return given
}

// CheckParams refuses query parameters other than known, and any given
// twice (which of the two counts would be a guess).
func CheckParams(q url.Values, known ...string) *Error {
	for k, vs := range q {
		switch {
		case !slices.Contains(known, k):
			return BadRequest("unknown_parameter", Printable(k), fmt.Sprintf("unknown query parameter %q (known: %s)", Printable(k), strings.Join(known, ", ")))
		case len(vs) > 1:
			return BadRequest("duplicate_parameter", k, fmt.Sprintf("query parameter %s is given %d times", k, len(vs)))
		}
	}
	return nil
}

// Printable cuts and escapes user text before it goes back in a message.
func Printable(s string) string {
	if len(s) > 64 {
		s = s[:64] + "…"
	}
	return strings.ToValidUTF8(s, "?")
}

// ValidID reports whether id is prefix and 24 lower-case hex characters,
// as the store's ids are (wh_, msg_, ...).
func ValidID(id, prefix string) bool {
	if len(id) != len(prefix)+24 || !strings.HasPrefix(id, prefix) {
		return false
	}
	for _, c := range id[len(prefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// WireTime is t as answers show it: in UTC, or zero (left out) when
// unset, the Unix epoch being how some stores read an unset time.
func WireTime(t time.Time) time.Time {
	if t.IsZero() || t.UnixMilli() == 0 {
		return time.Time{}
	}
	return t.UTC()
}

// StoreRetryAfter is the Retry-After (seconds) of an answer given while
// the store cannot be reached: about what a PostgreSQL restart takes.
const StoreRetryAfter = 2

// Internal is the answer to a request the store failed, logged to log
// (what names the request): 503 store_unavailable with Retry-After when
// the store could not be reached (store.Unavailable: the same request may
// succeed later), else 500.
func Internal(log *slog.Logger, what string, err error) *Error {
	if store.Unavailable(err) {
		log.Warn("api: "+what+": the store cannot be reached", "error", err)
		return &Error{Status: http.StatusServiceUnavailable, Code: "store_unavailable", RetryAfter: StoreRetryAfter,
			Message: what + " failed: keeper's store cannot be reached; retry after Retry-After"}
	}
	log.Error("api: "+what, "error", err)
	return &Error{Status: http.StatusInternalServerError, Code: "internal", Message: what + " failed; see keeper's log"}
}
