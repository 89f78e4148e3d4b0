// Package settlement is the settlement-intent protocol between keeper and a
// ledger: the client EmitIntents uses, and the built-in ledger (backed by
// keeper's store) that `keeper dev` and the tests run.
//
// The protocol is one intent per request, made safe to retry by an
// idempotency key:
//
//	POST /ledger/v1/intents
//	Idempotency-Key: epoch-<epoch>-<account>
//	{"epoch": "2026-11", "account": "alice", "amount": "333"}
//
// answers 201 with the ledger's record of the intent; the same key with the
// same body again answers 200 with the original record (header
// Idempotent-Replayed: true); the same key with a different body answers 422.
package settlement

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Header names of the protocol.
const (
	KeyHeader      = "Idempotency-Key"
	ReplayedHeader = "Idempotent-Replayed"
	intentsPath    = "/ledger/v1/intents"
)

// Key is the idempotency key of an epoch's intent for one account.
func Key(epoch, account string) string { return "epoch-" + epoch + "-" + account }

// Intent is a settlement intent: pay amount (integer minor units) to account
// for epoch.
type Intent struct {
	Epoch   string `json:"epoch"`
	Account string `json:"account"`
	Amount  string `json:"amount"`
}

// Record is the ledger's answer for an intent.
type Record struct {
	ID             string    `json:"id"`
	IdempotencyKey string    `json:"idempotency_key"`
	Epoch          string    `json:"epoch"`
	Account        string    `json:"account"`
	Amount         string    `json:"amount"`
	CreatedAt      time.Time `json:"created_at"`
}

// Error is a ledger's refusal, with the HTTP status it came with.
type Error struct {
	Status  int    `json:"-"`
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field,omitempty"`
}

func (e *Error) Error() string {
	return fmt.Sprintf("ledger answered %d %s: %s", e.Status, e.Code, e.Message)
}

// Temporary reports whether asking again may succeed: the ledger was
// unavailable or overloaded, not refusing this intent.
func (e *Error) Temporary() bool {
	return e.Status >= 500 || e.Status == http.StatusTooManyRequests || e.Status == http.StatusRequestTimeout
}

// Client sends intents to a ledger at BaseURL (e.g. https://ledger.example,
// without the /ledger/v1 part).
type Client struct {
	BaseURL string
	HTTP    *http.Client
}

// Submit sends one intent under its idempotency key. replayed is true when
// the ledger had the intent already. A refusal is an *Error; anything else
// (no answer, a cut connection, a timeout) is a transport error, safe to
// retry because of the key.
func (c *Client) Submit(ctx context.Context, key string, in Intent) (rec Record, replayed bool, err error) {
	body, _ := json.Marshal(in)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+intentsPath, bytes.NewReader(body))
	if err != nil {
		return Record{}, false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(KeyHeader, key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Record{}, false, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return Record{}, false, err
	}
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		e := &Error{Status: resp.StatusCode}
		if json.Unmarshal(raw, e) != nil || e.Code == "" {
			e.Code, e.Message = "http_"+fmt.Sprint(resp.StatusCode), strings.TrimSpace(string(raw))
		}
		return Record{}, false, e
	}
	if err := json.Unmarshal(raw, &rec); err != nil {
		return Record{}, false, fmt.Errorf("ledger answered %d with a body that is not a record: %w", resp.StatusCode, err)
	}
	if rec.IdempotencyKey != key || rec.Account != in.Account || rec.Amount != in.Amount {
		return Record{}, false, &Error{Status: resp.StatusCode, Code: "mismatched_record",
			Message: fmt.Sprintf("ledger acknowledged key %q for %s %s, not %q for %s %s", rec.IdempotencyKey, rec.Account, rec.Amount, key, in.Account, in.Amount)}
	}
	return rec, resp.StatusCode == http.StatusOK, nil
}

// InProcess returns an HTTP client that hands requests straight to h: the
// built-in ledger speaks the same protocol without a network in between.
func InProcess(h http.Handler) *http.Client {
	return &http.Client{Transport: handlerTransport{h}}
}

type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	if req.Body == nil {
		req.Body = http.NoBody
	}
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	t.h.ServeHTTP(rec, req)
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	return &http.Response{
		Status: fmt.Sprintf("%d %s", rec.status, http.StatusText(rec.status)), StatusCode: rec.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: rec.header, Body: io.NopCloser(&rec.body), ContentLength: int64(rec.body.Len()), Request: req,
	}, nil
}

type recorder struct {
	header http.Header
	status int
	wrote  bool
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
}
func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}

// IsTemporary reports whether err from Submit is worth another attempt.
func IsTemporary(err error) bool {
	var e *Error
	if errors.As(err, &e) {
		return e.Temporary()
	}
	return err != nil
}
