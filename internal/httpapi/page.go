package starter

import (
	"errors"
	"fmt"
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

// pageRequest reads a listing's limit and cursor query parameters. The limit
// defaults to defaultListLimit; the cursor is passed on as given, for the
// store that handed it out to check.
func pageRequest(q url.Values) (limit int, cursor string, aerr *apiError) {
	limit = defaultListLimit
	if s := q.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxListLimit {
			return 0, "", badRequest("invalid_limit", "limit", fmt.Sprintf("limit must be an integer from 1 to %d", maxListLimit))
		}
		limit = n
	}
	return limit, q.Get("cursor"), nil
}

// writePage answers a listing: the page's rows as views and the cursor of the
// next page, or the error of reading them (what names the read in the log),
// a cursor the store did not hand out being the client's mistake.
func writePage[R, V any](a *API, w http.ResponseWriter, what string, rows []R, next string, err error, view func(R) V) {
	if errors.Is(err, store.ErrBadCursor) {
		writeError(w, badRequest("invalid_cursor", "cursor", "cursor must be a next_cursor value from an earlier page"))
		return
	}
	if err != nil {
		writeError(w, a.internal(what, err))
		return
	}
	items := make([]V, len(rows))
	for i, r := range rows {
		items[i] = view(r)
	}
	writeJSON(w, http.StatusOK, map[string]any{"items": items, "next_cursor": next})
}
