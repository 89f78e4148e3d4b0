package anchor

import (
	"encoding/hex"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/keeperhq/keeper/internal/httpapi"
)

// checkRefusal fails unless a refusal is what a client can act on: a 4xx
// with a code and a message, and a field that is short, printable text.
func checkRefusal(t *testing.T, body []byte, aerr *httpapi.Error) {
	t.Helper()
	if aerr.Status < 400 || aerr.Status > 499 || aerr.Code == "" || aerr.Message == "" {
		t.Fatalf("bad error for %q: %+v", body, aerr)
	}
	if !utf8.ValidString(aerr.Field) || len(aerr.Field) > 80 || !utf8.ValidString(aerr.Message) {
		t.Fatalf("the error for %q names its field in text a client cannot print: %+v", body, aerr)
	}
}

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
			checkRefusal(t, body, aerr)
			return
		}
		if len(ne.Chains) == 0 || ne.Priority < 1 || ne.Priority > 10 || len(ne.IdempotencyKey) > maxKeyLen || len(ne.Metadata) > maxMetadataBytes {
			t.Fatalf("accepted a malformed evidence from %q: %+v (digest %s)", body, ne, hex.EncodeToString(ne.Digest[:]))
		}
	})
}

// FuzzDecodeBatchItem feeds arbitrary items to the batch's item decoder:
// its refusals are the single endpoint's, naming the item in their field
// and at the start of their message.
func FuzzDecodeBatchItem(f *testing.F) {
	for _, seed := range []string{
		`{"digest":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","chains":["stub"]}`,
		`{"digest":"zz","chains":[]}`, `[]`, `null`, `7`, `{"chains":["stub","stub"]}`, `{"DIGEST":"x"}`, `{"priority":"1"}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		_, aerr := decodeItem(body, []string{"stub", "etherlink"}, 999)
		if aerr == nil {
			return
		}
		checkRefusal(t, body, aerr)
		if !strings.HasPrefix(aerr.Field, "items[999]") || !strings.HasPrefix(aerr.Message, aerr.Field) {
			t.Fatalf("the refusal of %q does not name the item first: %+v", body, aerr)
		}
	})
}
