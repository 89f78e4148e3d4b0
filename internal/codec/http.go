package codec

import (
	"bytes"
	"errors"
	"io"
	"net/http"

	"go.temporal.io/sdk/converter"
)

// MaxRequestBytes bounds one /codec request: a Temporal payload may be 2 MB,
// which its JSON (base64) form makes about 2.7 MB.
const MaxRequestBytes = 4 << 20

// Handler serves POST …/encode and POST …/decode in the remote codec
// protocol of the Temporal Web UI and the temporal CLI (a JSON
// temporal.api.common.v1.Payloads in, the same out). A body over
// MaxRequestBytes gets 413; a payload that does not decode gets 400 with the
// reason, which never holds key material.
func (c *Codec) Handler() http.Handler {
	h := converter.NewPayloadCodecHTTPHandler(c)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			http.Error(w, "codec request body is larger than 4 MiB", http.StatusRequestEntityTooLarge)
			return
		case err != nil:
			http.Error(w, "could not read the request body", http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}
