// Package openapitest checks HTTP exchanges with keeper's API against its
// OpenAPI description (starter/openapi.json) with kin-openapi's validator.
// Tests serve the API through Handler; nothing else links this package.
package openapitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/starter"
)

// description is openapi.json, loaded and checked once.
var description = sync.OnceValues(func() (*openapi3.T, error) {
	doc, err := openapi3.NewLoader().LoadFromData(starter.OpenAPI())
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

// Description is the API's description, loaded and validated.
func Description() (*openapi3.T, error) { return description() }

// Handler serves h and checks every exchange against openapi.json: each
// answer must be one the description lists for its operation (status,
// headers, body, error code), and each request the API took (a 2xx answer)
// must be one the description allows. A test that uses the API through it
// fails on any route, field or code the description lacks.
func Handler(t testing.TB, h http.Handler) http.Handler {
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
		if msg := check(router, r, body, rec); msg != "" {
			t.Errorf("%s %s: %s", r.Method, r.URL.RequestURI(), msg)
		}
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		w.Write(rec.Body.Bytes())
	})
}

// Check says what in one request and its answer the description lacks, or
// "". body is the request body the API read.
func Check(r *http.Request, body []byte, rec *httptest.ResponseRecorder) string {
	router, err := descriptionRouter()
	if err != nil {
		return err.Error()
	}
	c := &capture{r: http.NoBody}
	c.buf.Write(body)
	return check(router, r, c, rec)
}

func check(router routers.Router, r *http.Request, body *capture, rec *httptest.ResponseRecorder) string {
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
