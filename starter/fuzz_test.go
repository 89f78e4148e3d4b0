package starter

import (
	"encoding/hex"
	"testing"
)

// FuzzDecodeEvidence feeds arbitrary bodies to the intake decoder: it must
// never panic, and whatever it accepts must be a well-formed evidence.
func FuzzDecodeEvidence(f *testing.F) {
	for _, seed := range []string{
		`{"digest":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","chains":["stub"]}`,
		`{"content":"aGVsbG8=","chains":["multi"],"priority":1,"idempotency_key":"k","metadata":{"a":[1,2,{"b":null}]}}`,
		`{"digest":"zz","chains":[]}`, `[]`, `null`, `{"chains":["stub","stub"]}`, `{"DIGEST":"x"}`, `{"metadata":"x"}`,
		"{\"digest\":\"\xff\"}", `{"priority":1e400}`, `{"chains":[{"a":1}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ne, aerr := decodeEvidence(body, []string{"stub", "etherlink"})
		if aerr != nil {
			if aerr.Status != 400 || aerr.Code == "" || aerr.Message == "" {
				t.Fatalf("bad error for %q: %+v", body, aerr)
			}
			return
		}
		if len(ne.Chains) == 0 || ne.Priority < 1 || ne.Priority > 10 || len(ne.IdempotencyKey) > maxKeyLen || len(ne.Metadata) > maxMetadataBytes {
			t.Fatalf("accepted a malformed evidence from %q: %+v (digest %s)", body, ne, hex.EncodeToString(ne.Digest[:]))
		}
	})
}
