// Package client is a Go client for keeper's HTTP API.
//
// It is written by hand on top of the API's OpenAPI 3.1 description
// (internal/starter/openapi.json, served at GET /openapi.json), not
// generated: the bodies it sends and reads are package api's, the types
// keeper's server answers with, named here by alias (Evidence, Wallet,
// Manifest, …), and its tests run against a real keeper API. It covers evidence, reward epochs and wallet backfill; the
// built-in ledger has its own client (package ledger) and the payload codec
// is Temporal's remote codec protocol.
//
// Every POST carries an Idempotency-Key (the caller's, or one generated per
// call; SubmitBatch one per item, in its body), so a POST retried after a
// lost answer does its work once. The header is sent in the IETF draft's
// form, a Structured Field string ("abc"), or bare for a key that is not
// printable ASCII, which such a string cannot hold. Answers
// 429 and 503 are retried after their Retry-After, a bounded number of times,
// never waiting longer than MaxRetryWait at once nor past ctx's deadline. An
// error answer comes back as an *Error carrying the API's code, message and
// HTTP status, read from its RFC 9457 problem details.
package client

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/idemkey"
)

// Defaults of a Client made by New.
const (
	DefaultMaxRetries   = 4
	DefaultMaxRetryWait = 30 * time.Second
	defaultRetryWait    = time.Second // when a 429 or 503 names no Retry-After
	maxAnswer           = 64 << 20
)

// Client calls one keeper API. Its zero value is not usable: make one with
// New. A Client is safe for concurrent use.
type Client struct {
	base string
	// Token, when set, is sent as Authorization: Bearer (KEEPER_API_TOKEN).
	Token string
	// HTTP sends the requests; New sets one with a 30 s timeout.
	HTTP *http.Client
	// MaxRetries is how many times a 429 or 503 answer is retried; 0: never.
	MaxRetries int
	// MaxRetryWait bounds one wait between attempts: a longer Retry-After
	// is cut to it.
	MaxRetryWait time.Duration
}

// New returns a client of the API at baseURL (e.g. http://127.0.0.1:8081).
func New(baseURL string) *Client {
	return &Client{
		base:         strings.TrimRight(baseURL, "/"),
		HTTP:         &http.Client{Timeout: 30 * time.Second},
		MaxRetries:   DefaultMaxRetries,
		MaxRetryWait: DefaultMaxRetryWait,
	}
}

// Error is an error answer of the API: RFC 9457 problem details, whose
// extension members code, message and field keeper has always sent. Its
// Status is the answer's HTTP status (a bulk item's own).
type Error = api.Problem

// IsCode reports whether err is an API error with the given code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}

// send sends c and decodes its 2xx answer into a new T.
func send[T any](ctx context.Context, cl *Client, c call) (*T, int, error) {
	v := new(T)
	c.out = v
	status, err := cl.do(ctx, c)
	if err != nil {
		return nil, status, err
	}
	return v, status, nil
}

// call is one request: what to send and where to decode the answer.
type call struct {
	method, path string
	query        url.Values
	body         any          // sent as JSON when not nil
	key          string       // Idempotency-Key of a POST; "" makes one
	keyless      bool         // a POST whose body carries its own keys: no Idempotency-Key
	out          any          // decodes a 2xx answer when not nil
	header       *http.Header // when not nil, gets the 2xx answer's headers
}

// do sends c, retrying 429 and 503 answers (store_unavailable, busy,
// overloaded, …) after their Retry-After while ctx allows, and returns the
// 2xx status.
func (cl *Client) do(ctx context.Context, c call) (int, error) {
	var body []byte
	if c.body != nil {
		b, err := json.Marshal(c.body)
		if err != nil {
			return 0, fmt.Errorf("encode %s %s: %w", c.method, c.path, err)
		}
		body = b
	}
	if c.method == http.MethodPost && c.key == "" && !c.keyless {
		c.key = NewIdempotencyKey()
	}
	u := cl.base + c.path
	if len(c.query) > 0 {
		u += "?" + c.query.Encode()
	}
	for attempt := 0; ; attempt++ {
		status, wait, err := cl.once(ctx, c, u, body)
		if wait < 0 || attempt >= cl.MaxRetries || !c.retryable() {
			return status, err
		}
		wait = min(wait, cl.MaxRetryWait)
		if end, ok := ctx.Deadline(); ok && time.Until(end) < wait {
			return status, fmt.Errorf("%w (not retried: its Retry-After ends after the context's deadline)", err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return status, fmt.Errorf("%w (gave up waiting to retry: %v)", err, ctx.Err())
		case <-t.C:
		}
	}
}

// retryable reports whether c may be sent again after a 429 or 503: a
// read, a PUT or DELETE, or a POST with an Idempotency-Key or whose body
// carries a key per item, so that a request the API took before answering
// is not done twice.
func (c call) retryable() bool {
	switch c.method {
	case http.MethodGet, http.MethodHead, http.MethodPut, http.MethodDelete:
		return true
	}
	return c.key != "" || c.keyless
}

// once sends one attempt. wait ≥ 0 says the answer may be retried after it.
func (cl *Client) once(ctx context.Context, c call, u string, body []byte) (status int, wait time.Duration, err error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, u, rd)
	if err != nil {
		return 0, -1, fmt.Errorf("bad API URL %q: %w", cl.base, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, application/problem+json")
	if c.key != "" {
		req.Header.Set(idemkey.Header, idemkey.Format(c.key))
	}
	if cl.Token != "" {
		req.Header.Set("Authorization", "Bearer "+cl.Token)
	}
	resp, err := cl.HTTP.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // its text repeats the URL, query included
		}
		return 0, -1, fmt.Errorf("cannot reach keeper API at %s: %w", cl.base, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if err != nil {
		return resp.StatusCode, -1, fmt.Errorf("read the answer to %s %s: %w", c.method, c.path, err)
	}
	if resp.StatusCode/100 != 2 {
		wait = -1
		if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
			wait = retryAfter(resp.Header.Get("Retry-After"), time.Now())
		}
		return resp.StatusCode, wait, answerError(resp, raw)
	}
	if c.header != nil {
		*c.header = resp.Header
	}
	if c.out != nil {
		if err := json.Unmarshal(raw, c.out); err != nil {
			return resp.StatusCode, -1, fmt.Errorf("unexpected answer to %s %s: %w", c.method, c.path, err)
		}
	}
	return resp.StatusCode, -1, nil
}

// answerError reads the API's problem details (or a JSON error with a code,
// as keeper answered before them), or makes one of a status that came
// without it (a proxy's answer).
func answerError(resp *http.Response, raw []byte) *Error {
	e := &Error{}
	err := json.Unmarshal(raw, e)
	e.Status = resp.StatusCode
	if err == nil && (e.Code != "" || e.Detail != "" || e.Title != "") {
		e.Message = cmp.Or(e.Message, e.Detail, e.Title)
		return e
	}
	e.Code, e.Message = "", resp.Status+" from "+resp.Request.URL.Host+", without keeper's JSON error"
	return e
}

// retryAfter reads a Retry-After header (seconds or an HTTP date) as a wait
// from now; without one, a second.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return defaultRetryWait
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0)
	}
	return defaultRetryWait
}

// NewIdempotencyKey returns a random key (128 bits in hex) for a POST.
func NewIdempotencyKey() string {
	b := make([]byte, 16)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// Health asks GET /health: nil while the node is alive.
func (cl *Client) Health(ctx context.Context) error {
	_, err := cl.do(ctx, call{method: http.MethodGet, path: "/health"})
	return err
}
