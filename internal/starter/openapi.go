package starter

import (
	_ "embed"
	"net/http"
)

// openAPI is the OpenAPI 3.1 description of every route, field, answer and
// error code of the API. The starter's tests check every request and answer
// they make against it, and its paths against the route table.
//
//go:embed openapi.json
var openAPI []byte

func serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(openAPI)
}

// OpenAPI returns the API's OpenAPI 3.1 description (JSON).
func OpenAPI() []byte { return append([]byte(nil), openAPI...) }
