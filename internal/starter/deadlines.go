package starter

import (
	"cmp"
	"net/http"
	"slices"
	"time"
)

// DefaultLongRequestTimeout is LongRequestTimeout unless configured.
const DefaultLongRequestTimeout = time.Minute

// longRoutes may move megabytes in one request: a batch of 1,000 evidence
// with their metadata (up to KEEPER_MAX_BATCH_BODY_BYTES, 18 MB) or a page
// of 1,000 of them, a page of transfers or ledger intents, a Temporal
// payload through the codec, a large scrape. The server's read and write
// timeouts (5 s by default; docs/epochs.md, "Rules": HTTP timeouts) would cut
// such a request off on a slow link, so these routes get LongRequestTimeout
// for both instead; every other route answers a small body and keeps the
// server's.
var longRoutes = []string{
	"/v1/evidence", "/v1/evidence/batch", "/v1/wallets/{address}/transfers",
	"/ledger/v1/epochs/{epoch}/intents", "/codec/encode", "/codec/decode", "/metrics",
}

// deadlines gives a long route's request LongRequestTimeout to be read and
// answered, from when its handler starts.
func (a *API) deadlines(pattern string, h http.Handler) http.Handler {
	if !slices.Contains(longRoutes, pattern) {
		return h
	}
	d := cmp.Or(a.LongRequestTimeout, DefaultLongRequestTimeout)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		until := time.Now().Add(d)
		// Errors mean a writer without deadlines (a test recorder, HTTP/2's
		// own limits): nothing to extend.
		_ = rc.SetReadDeadline(until)
		_ = rc.SetWriteDeadline(until)
		h.ServeHTTP(w, r)
	})
}
