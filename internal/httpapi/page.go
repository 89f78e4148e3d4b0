package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/keeperhq/keeper/internal/store"
)

// Page sizes of the listings.
const (
	defaultListLimit = 100
	maxListLimit     = 1000
)

// PageRequest reads a listing's limit and cursor query parameters. The limit
// defaults to defaultListLimit; the cursor is passed on as given, for the
// store that handed it out to check.
func PageRequest(q url.Values) (limit int, cursor string, aerr *Error) {
	limit = defaultListLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxListLimit {
			return 0, "", BadRequest("invalid_limit", "limit", fmt.Sprintf("limit must be an integer from 1 to %d", maxListLimit))
		}
		limit = n
	}
	return limit, q.Get("cursor"), nil
}

// WritePage answers a listing: the page's rows as views and the cursor of
// the next page, or the error of reading them (what names the read in log),
// a cursor the store did not hand out being the client's mistake.
func WritePage[R, V any](log *slog.Logger, w http.ResponseWriter, what string, rows []R, next string, err error, view func(R) V) {
	if errors.Is(err, store.ErrBadCursor) {
		WriteError(w, BadRequest("invalid_cursor", "cursor", "cursor must be a next_cursor value from an earlier page"))
		return
	}
	if err != nil {
		WriteError(w, Internal(log, what, err))
		return
	}
	items := make([]V, len(rows))
	for i, r := range rows {
		items[i] = view(r)
	}
	WriteJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": next})
}
