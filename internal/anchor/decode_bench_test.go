package anchor

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
)

// batchBody is a batch like keeper bench's: n items on two chains each,
// with a small metadata object on each when withMetadata.
func batchBody(n int, withMetadata bool) []byte {
	items := make([]string, n)
	for i := range items {
		d := sha256.Sum256([]byte(fmt.Sprint("bench/", i)))
		if withMetadata {
			items[i] = fmt.Sprintf(`{"digest":"%s","chains":["etherlink","solana"],"metadata":{"n":%d}}`, hex.EncodeToString(d[:]), i)
			continue
		}
		items[i] = fmt.Sprintf(`{"digest":"%s","chains":["etherlink","solana"]}`, hex.EncodeToString(d[:]))
	}
	return []byte(`{"items":[` + strings.Join(items, ",") + `]}`)
}

// BenchmarkDecodeBatch measures decoding and validating the body of POST
// /v1/evidence/batch: 1,000 items, as keeper bench sends them.
func BenchmarkDecodeBatch(b *testing.B) {
	chains := []string{"etherlink", "solana"}
	for _, bc := range []struct {
		name         string
		withMetadata bool
	}{{"plain", false}, {"metadata", true}} {
		b.Run(bc.name, func(b *testing.B) {
			body := batchBody(maxBatchItems, bc.withMetadata)
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				_, nes, _, aerr := decodeBatch(body, chains)
				if aerr != nil || len(nes) != maxBatchItems {
					b.Fatalf("%d evidence, %v", len(nes), aerr)
				}
			}
		})
	}
}
