package starter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/codec"
	"github.com/keeperhq/keeper/ledger"
	"github.com/keeperhq/keeper/starter"
	"github.com/keeperhq/keeper/store"
)

// description is openapi.json, loaded and checked once for all tests.
var description = sync.OnceValues(func() (*openapi3.T, error) {
	raw, err := os.ReadFile("openapi.json")
	if err != nil {
		return nil, err
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		return nil, err
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, err
	}
	return doc, nil
})

// descriptionRouter finds a request's operation in the description, on any
// host: the tests' servers are not the description's keeper dev address.
var descriptionRouter = sync.OnceValues(func() (routers.Router, error) {
	doc, err := description()
	if err != nil {
		return nil, err
	}
	anyHost := *doc
	anyHost.Servers = nil
	return gorillamux.NewRouter(&anyHost)
})

// unrouted are the answers the description gives for a request no operation
// describes (an unknown path, a method the route does not serve, an unclean
// path or a missing token), by status.
var unrouted = map[int]string{
	http.StatusBadRequest:          "InvalidPath",
	http.StatusUnauthorized:        "Unauthorized",
	http.StatusNotFound:            "NotFound",
	http.StatusMethodNotAllowed:    "MethodNotAllowed",
	http.StatusInternalServerError: "Internal",
}

// conforming serves h and checks every exchange against openapi.json: each
// answer must be one the description lists for its operation (status,
// headers, body, error code), and each request the API took (a 2xx answer)
// must be one the description allows. A test that uses the API through it
// fails on any route, field or code the description lacks.
func conforming(t *testing.T, h http.Handler) http.Handler {
	t.Helper()
	_, err := description()
	require.NoError(t, err, "openapi.json")
	router, err := descriptionRouter()
	require.NoError(t, err)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := &capture{r: r.Body}
		if r.Body != nil {
			r.Body = body
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		if msg := checkExchange(router, r, body, rec); msg != "" {
			t.Errorf("%s %s: %s", r.Method, r.URL.RequestURI(), msg)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// checkExchange says what in one request and its answer the description
// lacks, or "".
func checkExchange(router routers.Router, r *http.Request, body *capture, rec *httptest.ResponseRecorder) string {
	ctx := context.Background()
	asked := r.Clone(ctx)
	if asked.Method == http.MethodHead {
		asked.Method = http.MethodGet // a GET route answers HEAD too, without a body
	}
	asked.Body = io.NopCloser(bytes.NewReader(body.buf.Bytes()))
	// The API takes any JSON type in UTF-8, and a body without a Content-Type
	// as JSON (see info.description); the description lists application/json.
	if ct := asked.Header.Get("Content-Type"); body.buf.Len() > 0 && (ct == "" || isJSONType(ct)) {
		asked.Header.Set("Content-Type", "application/json")
	}
	route, params, err := router.FindRoute(asked)
	if err != nil {
		return checkUnrouted(rec)
	}
	in := &openapi3filter.RequestValidationInput{Request: asked, PathParams: params, Route: route,
		Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}}
	if rec.Code/100 == 2 && !body.over {
		if err := openapi3filter.ValidateRequest(ctx, in); err != nil {
			return "the API took a request the description does not allow: " + err.Error()
		}
	}
	if r.Method == http.MethodHead {
		return ""
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: rec.Code, Header: rec.Header(),
		Options: &openapi3filter.Options{IncludeResponseStatus: true}}
	out.SetBodyBytes(rec.Body.Bytes())
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		return "the answer is not one the description lists: " + err.Error()
	}
	return ""
}

func isJSONType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// checkUnrouted checks the answer to a request no operation describes
// against the description's shared answers.
func checkUnrouted(rec *httptest.ResponseRecorder) string {
	doc, _ := description()
	name, ok := unrouted[rec.Code]
	if !ok {
		return "no operation describes the request, and the description lists no shared answer " + http.StatusText(rec.Code)
	}
	resp := doc.Components.Responses[name].Value
	for h, hdr := range resp.Headers {
		if hdr.Value.Required && rec.Header().Get(h) == "" {
			return name + " answer without its " + h + " header"
		}
	}
	media := resp.Content.Get(rec.Header().Get("Content-Type"))
	if media == nil {
		return name + " answer of type " + rec.Header().Get("Content-Type")
	}
	var v any
	if err := json.Unmarshal(rec.Body.Bytes(), &v); err != nil {
		return name + " answer that is not JSON: " + err.Error()
	}
	if err := media.Schema.Value.VisitJSON(v, openapi3.EnableJSONSchema2020(), openapi3.VisitAsResponse()); err != nil {
		return name + " answer that does not match its schema: " + err.Error()
	}
	return ""
}

// capture keeps what the handler read of a request body, up to a limit.
type capture struct {
	r    io.ReadCloser
	buf  bytes.Buffer
	over bool // the body was larger than the limit: not checked
}

const captureLimit = 2 << 20

func (c *capture) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	if c.buf.Len()+n > captureLimit {
		c.over = true
	} else {
		c.buf.Write(p[:n])
	}
	return n, err
}

func (c *capture) Close() error { return c.r.Close() }

// everyRoute is an API with every optional part switched on: wallets,
// epochs with the built-in ledger, and the codec.
func everyRoute(t *testing.T) *starter.API {
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "keeper.db"))
	require.NoError(t, err)
	t.Cleanup(func() { st.Close() })
	c, err := codec.New(codec.Key{ID: "k1", Secret: [codec.KeySize]byte{1}})
	require.NoError(t, err)
	return &starter.API{Store: st, Chains: []string{"stub"}, MaxPending: 100, MaxBodyBytes: 1 << 20,
		Logger:   slog.New(slog.DiscardHandler),
		Temporal: &fakeTemporal{}, Epochs: starter.EpochOptions{MaxInFlight: 4, Duration: time.Hour},
		Ledger:  &ledger.Server{Store: st},
		Wallets: &starter.Wallets{Networks: []starter.WalletNetwork{{Name: "solana", Unit: "signatures", Parse: func(s string) (string, error) { return s, nil }}}},
		Codec:   starter.CodecOptions{Handler: c.Handler()},
	}
}

func TestTheDescriptionHasEveryRouteOfTheAPIAndNoOther(t *testing.T) {
	doc, err := description()
	require.NoError(t, err)
	described := map[string][]string{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			// The codec's CORS preflight is answered before routing.
			if method == http.MethodOptions && strings.HasPrefix(path, "/codec/") {
				continue
			}
			described[path] = append(described[path], method)
		}
		sort.Strings(described[path])
	}
	assert.Equal(t, everyRoute(t).RouteTable(), described)
}

func TestTheAPIServesItsDescription(t *testing.T) {
	h := conforming(t, everyRoute(t).Handler())
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/openapi.json", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	served, err := openapi3.NewLoader().LoadFromData(rec.Body.Bytes())
	require.NoError(t, err)
	assert.Equal(t, "3.1.0", served.OpenAPI)
	require.NoError(t, served.Validate(context.Background()))
	assert.NotNil(t, served.Paths.Find("/v1/evidence"))
}

// Every error code the API answers is in the description: the codes the
// description lists for an answer are what the conformance check holds the
// API to, so here a code it lacks is refused.
func TestTheConformanceCheckRefusesAnUndescribedCodeFieldOrRoute(t *testing.T) {
	router, err := descriptionRouter()
	require.NoError(t, err)
	answer := func(status int, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		rec.Header().Set("Content-Type", "application/json")
		rec.WriteHeader(status)
		rec.WriteString(body)
		return rec
	}
	get := httptest.NewRequest(http.MethodGet, "/v1/evidence/ev_000000000000000000000000", nil)
	cases := map[string]struct {
		r   *http.Request
		rec *httptest.ResponseRecorder
	}{
		"an error code the answer does not list": {get, answer(404, `{"code":"gone","message":"x"}`)},
		"a status the operation does not list":   {get, answer(402, `{"code":"not_found","message":"x"}`)},
		"an error without its message":           {get, answer(404, `{"code":"not_found"}`)},
		"an undescribed field in an answer":      {httptest.NewRequest(http.MethodGet, "/health", nil), answer(200, `{"status":"ok","uptime":3}`)},
		"a route the description lacks":          {httptest.NewRequest(http.MethodGet, "/v1/batches", nil), answer(200, `{}`)},
		"an undescribed field the API took": {httptest.NewRequest(http.MethodPost, "/v1/wallets", strings.NewReader(`{"address":"a","label":"cold"}`)),
			answer(202, `{}`)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			body := &capture{r: c.r.Body}
			io.Copy(io.Discard, body)
			assert.NotEmpty(t, checkExchange(router, c.r, body, c.rec))
		})
	}
	ok := answer(404, `{"code":"not_found","message":"no evidence ev_000000000000000000000000","field":"id"}`)
	assert.Empty(t, checkExchange(router, get, &capture{r: http.NoBody}, ok), "a described answer passes")
}
