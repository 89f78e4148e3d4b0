package client_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/keeperhq/keeper/client"
)

// Anchor a file's digest on every chain keeper is configured with, wait
// until it is confirmed and keep its receipt beside the file.
func Example() {
	c := client.New("http://127.0.0.1:8081")
	c.Token = os.Getenv("KEEPER_API_TOKEN") // when the API has one
	ctx := context.Background()

	data, err := os.ReadFile("report.pdf")
	if err != nil {
		log.Fatal(err)
	}
	sum := sha256.Sum256(data)
	ev, err := c.SubmitEvidence(ctx, client.EvidenceRequest{
		Digest:         hex.EncodeToString(sum[:]),
		Chains:         []string{"multi"},
		IdempotencyKey: "report.pdf-" + hex.EncodeToString(sum[:8]), // optional: a retry stores nothing twice
	})
	if client.IsCode(err, "overloaded") {
		log.Fatal("keeper is busy; try later: ", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	ev, err = c.WaitConfirmed(ctx, ev.ID, 2*time.Second, func(e *client.Evidence) { fmt.Println(e.ID, e.Status) })
	if err != nil {
		log.Fatal(err)
	}
	b, _ := json.MarshalIndent(ev.Receipt, "", "  ")
	if err := os.WriteFile("report.pdf.receipt.json", b, 0o644); err != nil {
		log.Fatal(err)
	}
}
