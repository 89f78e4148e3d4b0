package epoch

import (
	"encoding/json"
	"net/url"
	"strconv"
	"testing"
	"unicode/utf8"

	"github.com/keeperhq/keeper/internal/rewards"
)

// FuzzDecodeEpoch feeds arbitrary bodies to the compute decoder: it must
// never panic; what it accepts has a pool in range, a bounded deadline and
// exactly one of sealed usage or an http(s) source; and the request sent
// again in its canonical form has the same request hash, so a client that
// repeats itself joins its epoch rather than conflicting with it.
func FuzzDecodeEpoch(f *testing.F) {
	for _, seed := range []string{
		`{"pool":"1000","usage":[{"account":"carol","units":"1"},{"account":"alice","units":"01"}]}`,
		`{"pool":"170141183460469231731687303715884105728","usage":[{"account":"a","units":"18446744073709551615"}],"deadline":"90s"}`,
		`{"pool":"1200","source":"http://127.0.0.1:8099/usage.json","deadline":"15m"}`,
		`{"pool":"1","source":"https://acct.example/u?epoch=7#frag"}`,
		`{"pool":"0","usage":[]}`, `{"pool":1,"usage":[{"account":"a","units":1}]}`, `{"pool":"1","usage":[{"Account":"a","units":"1"}]}`,
		`{"pool":"1","usage":[{"account":"a","account":"b","units":"1"}]}`, `{"pool":"1","usage":[null]}`,
		`{"pool":"1","usage":[{"account":"a","units":"1"}],"source":"http://x"}`, `{"pool":"1","source":"http://u:p@x/"}`,
		`{"pool":"1e400","usage":[{"account":"a","units":"99999999999999999999999"}]}`, `{"pool":"1","deadline":"9999999999h"}`,
		"{\"pool\":\"1\",\"source\":\"http://ex\u202eample.com/\"}", `[]`, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		ne, deadline, aerr := decodeEpoch("e", body)
		if aerr != nil {
			// A refusal is what a client can act on: a 4xx with a code and
			// a message, and a field that is short, printable text.
			if aerr.Status < 400 || aerr.Status > 499 || aerr.Code == "" || aerr.Message == "" {
				t.Fatalf("bad error for %q: %+v", body, aerr)
			}
			if !utf8.ValidString(aerr.Field) || len(aerr.Field) > 80 || !utf8.ValidString(aerr.Message) {
				t.Fatalf("the error for %q names its field in text a client cannot print: %+v", body, aerr)
			}
			return
		}
		pool, err := rewards.ParseAmount(ne.Pool)
		if err != nil || pool.IsZero() || pool.Cmp(rewards.MaxPool) > 0 || pool.String() != ne.Pool {
			t.Fatalf("accepted %q with pool %q", body, ne.Pool)
		}
		if deadline < 0 || deadline > maxEpochDeadline {
			t.Fatalf("accepted %q with deadline %s", body, deadline)
		}
		if len(ne.RequestHash) != 64 {
			t.Fatalf("accepted %q with request hash %q", body, ne.RequestHash)
		}
		var canonical map[string]any
		switch {
		case ne.Usage != nil && ne.Source == "":
			in, err := rewards.ParseSealed(ne.Usage)
			if err != nil || in.Pool != pool || rewards.Hash(ne.Usage) != ne.RequestHash {
				t.Fatalf("accepted %q, sealed as %q, which does not read back (%v)", body, ne.Usage, err)
			}
			usage := make([]map[string]string, len(in.Entries))
			for i, e := range in.Entries {
				usage[i] = map[string]string{"account": e.Account, "units": strconv.FormatUint(e.Units, 10)}
			}
			canonical = map[string]any{"pool": ne.Pool, "usage": usage}
		case ne.Usage == nil && ne.Source != "":
			u, err := url.Parse(ne.Source)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || len(ne.Source) > maxSourceLen {
				t.Fatalf("accepted %q with source %q", body, ne.Source)
			}
			canonical = map[string]any{"pool": ne.Pool, "source": ne.Source}
		default:
			t.Fatalf("accepted %q with both or neither of usage and source: %+v", body, ne)
		}
		again, err := json.Marshal(canonical)
		if err != nil {
			t.Fatal(err)
		}
		ne2, _, aerr := decodeEpoch("e", again)
		if aerr != nil || ne2.RequestHash != ne.RequestHash {
			t.Fatalf("%q was accepted, but its canonical form %s is another request (%v)", body, again, aerr)
		}
	})
}
