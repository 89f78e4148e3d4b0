package starter

import (
	"bytes"
	"github.com/keeperhq/keeper/internal/httpapi"
	"net/http"
	"strings"
)

// CodecOptions serve Temporal's remote codec protocol (POST /codec/encode,
// POST /codec/decode) so the Web UI and the temporal CLI can show keeper's
// encrypted payloads. With KEEPER_API_TOKEN set the routes need the token,
// like /v1.
type CodecOptions struct {
	Handler      http.Handler // nil: no /codec routes
	AllowOrigins []string     // browser origins (e.g. the Web UI's) allowed to call /codec
}

func (a *API) codecRoutes() []httpapi.Route {
	if a.Codec.Handler == nil {
		return nil
	}
	h := jsonErrors(a.Codec.Handler).ServeHTTP
	return []httpapi.Route{
		{Pattern: "/codec/encode", Methods: httpapi.Methods{"POST": h}},
		{Pattern: "/codec/decode", Methods: httpapi.Methods{"POST": h}},
	}
}

// codecCORS lets the Web UI's pages call /codec from the browser. It answers
// preflights before the token check (a browser never sends credentials on a
// preflight) and marks every answer to an allowed origin, refusals included,
// so the UI can show why a decode failed. Other origins get no CORS headers,
// so a browser keeps the answer from their pages.
func (a *API) codecCORS(next http.Handler) http.Handler {
	allowed := map[string]bool{}
	for _, o := range a.Codec.AllowOrigins {
		allowed[o] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a.Codec.Handler == nil || !strings.HasPrefix(r.URL.Path, "/codec/") {
			next.ServeHTTP(w, r)
			return
		}
		origin := r.Header.Get("Origin")
		ok := origin != "" && allowed[origin]
		h := w.Header()
		h.Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			h.Add("Vary", "Access-Control-Request-Method, Access-Control-Request-Headers")
			if !ok {
				httpapi.WriteError(w, &httpapi.Error{Status: http.StatusForbidden, Code: "origin_not_allowed", Message: "origin " + httpapi.Printable(origin) + " is not in KEEPER_CODEC_CORS_ORIGINS"})
				return
			}
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
			h.Set("Access-Control-Allow-Methods", "POST")
			// What the Web UI sends: its namespace, JSON, and with "pass access
			// token" the Authorization headers.
			h.Set("Access-Control-Allow-Headers", "Authorization, Authorization-Extras, Content-Type, X-Namespace")
			h.Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
		if ok {
			h.Set("Access-Control-Allow-Origin", origin)
			h.Set("Access-Control-Allow-Credentials", "true")
		}
		next.ServeHTTP(w, r)
	})
}

// jsonErrors gives the codec's refusals (the SDK's handler answers them in
// plain text) the API's JSON error shape, so every route answers a client
// mistake alike. Successful answers pass through untouched.
func jsonErrors(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recordedAnswer{header: http.Header{}, status: http.StatusOK}
		h.ServeHTTP(rec, r)
		if rec.status < 400 {
			for k, v := range rec.header {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.status)
			w.Write(rec.body.Bytes())
			return
		}
		code := "invalid_payloads"
		switch {
		case rec.status == http.StatusRequestEntityTooLarge:
			code = "body_too_large"
		case rec.status >= 500:
			code = "codec_failed"
		}
		httpapi.WriteError(w, &httpapi.Error{Status: rec.status, Code: code, Field: "payloads", Message: httpapi.Printable(strings.TrimSpace(rec.body.String()))})
	})
}

// recordedAnswer holds a handler's answer until jsonErrors has seen its
// status.
type recordedAnswer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (a *recordedAnswer) Header() http.Header         { return a.header }
func (a *recordedAnswer) WriteHeader(status int)      { a.status = status }
func (a *recordedAnswer) Write(b []byte) (int, error) { return a.body.Write(b) }
