package starter

import (
	"cmp"
	"crypto/sha256"
	"crypto/subtle"
	"github.com/keeperhq/keeper/internal/httpapi"
	"net/http"
	"strings"
)

// AuthOptions protect the API. With an empty Token every route is open (fine
// on loopback; keeper warns at start when it listens beyond).
type AuthOptions struct {
	Token       string // required as "Authorization: Bearer <token>" on /v1, /rewarder, /ledger and /codec routes
	MetricsOpen bool   // /metrics answers without the token
}

// MaxInFlight bounds concurrent requests per route; beyond it a request gets
// 503 at once instead of queuing, so nothing grows without bound.
const defaultMaxInFlight = 256

// guard checks the bearer token (in constant time) on protected routes and
// caps concurrent requests per route prefix.
func (a *API) guard(next http.Handler) http.Handler {
	want := sha256.Sum256([]byte(a.Auth.Token))
	limit := cmp.Or(a.MaxInFlight, defaultMaxInFlight)
	slots := map[string]chan struct{}{}
	for _, p := range []string{"/v1/", "/rewarder/", "/ledger/", "/codec/", "/metrics", "/readyz"} {
		slots[p] = make(chan struct{}, limit)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.Auth.Token != "" && a.protected(r.URL.Path) && !authorized(w, r, want) {
			return
		}
		for prefix, sem := range slots {
			if strings.HasPrefix(r.URL.Path, prefix) {
				select {
				case sem <- struct{}{}:
					defer func() { <-sem }()
				default:
					a.metrics.busy.WithLabelValues(strings.Trim(prefix, "/")).Inc()
					w.Header().Set("Retry-After", "1")
					httpapi.WriteError(w, &httpapi.Error{Status: http.StatusServiceUnavailable, Code: "busy", Message: "too many concurrent requests on " + prefix + "; retry shortly"})
					return
				}
				break
			}
		}
		next.ServeHTTP(w, r)
	})
}

// authorized checks the bearer token in constant time, answering 401 when
// it is missing or wrong.
func authorized(w http.ResponseWriter, r *http.Request, want [32]byte) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	sum := sha256.Sum256([]byte(got))
	if !ok || subtle.ConstantTimeCompare(sum[:], want[:]) != 1 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="keeper"`)
		httpapi.WriteError(w, &httpapi.Error{Status: http.StatusUnauthorized, Code: "unauthorized", Message: "this route needs Authorization: Bearer <KEEPER_API_TOKEN>"})
		return false
	}
	return true
}

// MetricsAuth protects a /metrics handler served outside the API (on
// KEEPER_METRICS_ADDR) as the API protects its own.
func MetricsAuth(o AuthOptions, next http.Handler) http.Handler {
	if o.Token == "" || o.MetricsOpen {
		return next
	}
	want := sha256.Sum256([]byte(o.Token))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if authorized(w, r, want) {
			next.ServeHTTP(w, r)
		}
	})
}

func (a *API) protected(path string) bool {
	switch {
	case strings.HasPrefix(path, "/v1/"), path == "/v1", strings.HasPrefix(path, "/rewarder/"), strings.HasPrefix(path, "/ledger/"), strings.HasPrefix(path, "/codec/"):
		return true
	case path == "/metrics":
		return !a.Auth.MetricsOpen
	}
	return false
}
