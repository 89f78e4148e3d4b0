package client_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/keeperhq/keeper/client"
)

// Submit an evidence and wait for it to be confirmed, against a stand-in
// for keeper's API that answers with the API's own bodies (client.Evidence
// and client.Error are package api's types).
func ExampleClient_SubmitEvidence() {
	var asked atomic.Int32 // the stand-in confirms the evidence on its second GET
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/evidence", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Digest string   `json:"digest"`
			Chains []string `json:"chains"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Digest) != 64 {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(http.StatusBadRequest)
			json.NewEncoder(w).Encode(client.Error{Status: 400, Code: "invalid_digest", Message: "digest must be 64 hex characters", Field: "digest"})
			return
		}
		fmt.Println("server: Idempotency-Key", r.Header.Get("Idempotency-Key"))
		w.WriteHeader(http.StatusAccepted)
		json.NewEncoder(w).Encode(client.Evidence{ID: "ev_1", Status: client.StatusPending, Digest: req.Digest, Chains: req.Chains})
	})
	mux.HandleFunc("GET /v1/evidence/{id}", func(w http.ResponseWriter, r *http.Request) {
		ev := client.Evidence{ID: r.PathValue("id"), Status: client.StatusSubmitted, Chains: []string{"etherlink"}}
		if asked.Add(1) > 1 {
			ev.Status = client.StatusConfirmed
			ev.Anchors = []client.EvidenceAnchor{{Chain: "etherlink", Status: "confirmed", TxRef: "0x6d06…6e21", Block: 14177600}}
		}
		json.NewEncoder(w).Encode(ev)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	c := client.New(srv.URL)
	ctx := context.Background()
	ev, err := c.SubmitEvidence(ctx, client.EvidenceRequest{
		Digest:         "1e27fea3c7393b11fd7589200bb0ed56dddedb38d4d50927d7a9a7aebd389993",
		Chains:         []string{"etherlink"},
		IdempotencyKey: "contract.pdf-1",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ev.ID, ev.Status)
	ev, err = c.WaitConfirmed(ctx, ev.ID, time.Millisecond, func(e *client.Evidence) { fmt.Println("progress:", e.Status) })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(ev.ID, ev.Status, "in block", ev.Anchors[0].Block)

	// An error answer is an *client.Error carrying the API's code.
	_, err = c.SubmitEvidence(ctx, client.EvidenceRequest{Digest: "abc", Chains: []string{"etherlink"}})
	fmt.Println(client.IsCode(err, "invalid_digest"), err)
	// Output:
	// server: Idempotency-Key "contract.pdf-1"
	// ev_1 pending
	// progress: submitted
	// progress: confirmed
	// ev_1 confirmed in block 14177600
	// true digest must be 64 hex characters (HTTP 400, invalid_digest)
}
