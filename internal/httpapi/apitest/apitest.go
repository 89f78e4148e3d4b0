// Package apitest is what the features' route tests share: sending a
// request to a handler, reading a problem-details answer, and checking a
// table of hostile requests, each refused at once with a 4xx that names
// its code and field.
package apitest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Do sends method path to h, with body (when not empty) as JSON and header
// on top, and returns the answer.
func Do(t testing.TB, h http.Handler, method, path, body string, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// Problem is an error answer's body: RFC 9457 problem details with
// keeper's code, message and field.
type Problem struct {
	Type     string `json:"type"`
	Title    string `json:"title"`
	Status   int    `json:"status"`
	Detail   string `json:"detail"`
	Instance string `json:"instance"`
	Code     string `json:"code"`
	Message  string `json:"message"`
	Field    string `json:"field"`
}

// RequireRefused checks an error answer: its status, and problem details
// with its code, a message and the field at fault, whose type, title,
// status and detail agree with them.
func RequireRefused(t testing.TB, rec *httptest.ResponseRecorder, status int, code, field string) {
	t.Helper()
	require.Equal(t, status, rec.Code, "body: %.300s", rec.Body.String())
	assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	var e Problem
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &e), "body: %.300s", rec.Body.String())
	assert.Equal(t, code, e.Code)
	assert.NotEmpty(t, e.Message)
	assert.Equal(t, field, e.Field)
	assert.Equal(t, "tag:keeperhq.github.io,2026:problems/"+code, e.Type)
	assert.NotEmpty(t, e.Title)
	assert.Equal(t, status, e.Status)
	assert.Equal(t, e.Message, e.Detail)
}

// Hostile is one request that must be refused: sent as Do sends it, and
// answered with Status, Code and Field. A test's table is a slice of a
// struct of these fields, in this order, declared in the test (so its rows
// need no field names).
type Hostile struct {
	Name, Method, Path, Body string
	Header                   map[string]string
	Status                   int
	Code, Field              string
}

// Row is a test's row type: any struct with Hostile's fields.
type Row interface {
	~struct {
		Name, Method, Path, Body string
		Header                   map[string]string
		Status                   int
		Code, Field              string
	}
}

// RequireAllRefused sends each row to h and checks it is refused as the row
// says (problem details as RequireRefused checks them), at once, and that logs (the server's log) shows no panic and no
// internal error. Run it in a testing/synctest bubble: the bubble's clock
// moves only when the server waits, so a request that held it (a timer, a
// pause, a body read to its deadline) shows. Subtests cannot run in a
// bubble, so each row's name is in its messages.
func RequireAllRefused[R Row](t *testing.T, h http.Handler, logs *bytes.Buffer, rows []R) {
	t.Helper()
	type refusal struct {
		Status      int
		Code, Field string
	}
	for _, r := range rows {
		row := Hostile(r)
		start := time.Now()
		rec := Do(t, h, row.Method, row.Path, row.Body, row.Header)
		assert.Zero(t, time.Since(start), "%s: a hostile request does not hold the server", row.Name)
		var e Problem
		_ = json.Unmarshal(rec.Body.Bytes(), &e)
		assert.Equal(t, refusal{row.Status, row.Code, row.Field}, refusal{rec.Code, e.Code, e.Field}, "%s is refused", row.Name)
		assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"), row.Name)
		assert.NotEmpty(t, e.Message, row.Name)
		assert.Equal(t, "tag:keeperhq.github.io,2026:problems/"+row.Code, e.Type, row.Name)
		assert.NotEmpty(t, e.Title, row.Name)
		assert.Equal(t, row.Status, e.Status, row.Name)
		assert.Equal(t, e.Message, e.Detail, row.Name)
	}
	assert.NotContains(t, logs.String(), "panicked")
	assert.NotContains(t, logs.String(), "level=ERROR", "no client mistake reached an internal error")
}

// Decode reads an answer's JSON body into a T, checking its content type:
// problem details for an error, JSON otherwise.
func Decode[T any](t testing.TB, rec *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if rec.Code >= 400 {
		assert.Equal(t, "application/problem+json", rec.Header().Get("Content-Type"))
	} else {
		assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &v), "body: %s", rec.Body.String())
	return v
}
