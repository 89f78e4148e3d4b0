package witness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/keeperhq/keeper/internal/tlogwitness"
)

// maxBody bounds an add-checkpoint's body. The spec bounds the proof at 63
// lines (2.9 KB); the rest leaves room for a checkpoint's extension and
// signature lines, ML-DSA-44 cosignatures (3.3 KB a line) included.
const maxBody = 64 << 10

// RefusedPath lists the refused requests the log's key signed (Refusal),
// as a JSON array, oldest first.
const RefusedPath = "/refused"

// Handler serves the witness: POST /add-checkpoint (c2sp.org/tlog-witness)
// and GET /refused. A path it does not serve is 404; another method on one
// it does, 405 with the Allow header.
func (w *Witness) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+tlogwitness.AddCheckpointPath, w.serveAddCheckpoint)
	mux.HandleFunc("GET "+RefusedPath, w.serveRefused)
	return mux
}

func (w *Witness) serveAddCheckpoint(rw http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(rw, r.Body, maxBody))
	var a answer
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		a = textAnswer(http.StatusRequestEntityTooLarge, fmt.Sprintf("the request is over %d bytes", maxBody))
	case err != nil:
		a = textAnswer(http.StatusBadRequest, "the request body could not be read")
	default:
		a = w.addCheckpoint(r.Context(), body)
	}
	w.metrics.answered(a.status)
	rw.Header().Set("Content-Type", a.contentType)
	rw.Header().Set("X-Content-Type-Options", "nosniff")
	rw.WriteHeader(a.status)
	_, _ = rw.Write(a.body)
}

func (w *Witness) serveRefused(rw http.ResponseWriter, r *http.Request) {
	list, err := w.store.refused(r.Context())
	if err != nil {
		w.log.Error("list the refused requests", "error", err)
		http.Error(rw, "the witness could not read its refused requests", http.StatusInternalServerError)
		return
	}
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(rw).Encode(list)
}
