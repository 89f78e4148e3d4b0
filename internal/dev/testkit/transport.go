package testkit

import (
	"net/http"
	"net/http/httptest"
)

// HandlerTransport answers every request with Handler in the calling
// goroutine, with no socket: a testing/synctest bubble, which cannot wait on
// a loopback connection, can then hold a whole HTTP exchange and its clock
// runs every wait, timeout and Retry-After.
type HandlerTransport struct{ Handler http.Handler }

func (t HandlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	t.Handler.ServeHTTP(rec, r)
	return rec.Result(), nil
}
