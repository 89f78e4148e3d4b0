// Package api holds the HTTP API's request and response bodies, shared by
// keeper's server and its Go client.
//
// Each type is one JSON body of the API as the OpenAPI description
// (GET /openapi.json) lists it, with the json tags that make its encoding:
// the server writes its answers with these types and the client reads them
// with the same ones, so the two cannot drift apart. Validation of the
// requests is the server's, over these types; they hold no behaviour.
//
// The package links only the standard library and the public receipt
// package (an evidence's answer carries its receipt).
package api
