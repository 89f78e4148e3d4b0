package api_test

import (
	"encoding/json"
	"fmt"

	"github.com/keeperhq/keeper/api"
)

// Write the body of POST /v1/evidence and read the API's error answer,
// with the types keeper's server itself uses.
func Example() {
	body, err := json.Marshal(api.EvidenceRequest{
		Digest:   "1e27fea3c7393b11fd7589200bb0ed56dddedb38d4d50927d7a9a7aebd389993",
		Chains:   []string{"etherlink", "solana"},
		Metadata: json.RawMessage(`{"file":"contract.pdf"}`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(body))

	// Every error answer is RFC 9457 problem details with keeper's code.
	answer := `{
		"type": "tag:keeperhq.github.io,2026:problems/invalid_digest",
		"title": "Bad Request",
		"status": 400,
		"detail": "digest must be 64 hex characters",
		"code": "invalid_digest",
		"message": "digest must be 64 hex characters",
		"field": "digest"
	}`
	var p api.Problem
	if err := json.Unmarshal([]byte(answer), &p); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Code, "in", p.Field)
	fmt.Println("as an error:", &p) // what package client returns
	// Output:
	// {"digest":"1e27fea3c7393b11fd7589200bb0ed56dddedb38d4d50927d7a9a7aebd389993","chains":["etherlink","solana"],"metadata":{"file":"contract.pdf"}}
	// invalid_digest in digest
	// as an error: digest must be 64 hex characters (HTTP 400, invalid_digest)
}
