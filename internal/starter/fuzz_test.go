package starter

import (
	"encoding/hex"
	"encoding/json"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/backfill/evmscan"
	"github.com/keeperhq/keeper/internal/backfill/solscan"
	"github.com/keeperhq/keeper/internal/httpapi"
	"github.com/keeperhq/keeper/internal/rewards"
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

// FuzzDecodeWallet feeds arbitrary bodies to the wallet decoder: it must
// never panic; what it accepts names configured networks once each, with an
// address each of them reads as itself; and adding that canonical address
// again on those networks is the same request.
func FuzzDecodeWallet(f *testing.F) {
	w := &Wallets{Networks: []WalletNetwork{
		{Name: "etherlink", Unit: "blocks", Start: 100, Parse: evmscan.ParseAddress},
		{Name: "solana", Unit: "signatures", Parse: solscan.ParseAddress},
	}}
	for _, seed := range []string{
		`{"address":"0x52908400098527886E0F7030069857D2E4169EE7"}`,
		`{"address":"0x52908400098527886e0f7030069857d2e4169ee7","networks":["etherlink"]}`,
		`{"address":"9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin","networks":["solana"]}`,
		`{"address":"9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin","networks":["solana","etherlink"]}`,
		`{"address":"0x52908400098527886E0F7030069857D2E4169Ee7"}`, `{"address":""}`, `{"address":42}`,
		`{"address":"x","networks":[]}`, `{"address":"x","networks":null}`, `{"address":"x","networks":[null]}`,
		`{"ADDRESS":"x"}`, `{"address":"a","address":"b"}`, `{"address":"a","networks":["etherlink","etherlink"]}`,
		"{\"address\":\"0x5290\u202e8400098527886e0f7030069857d2e4169ee7\"}", `[]`, `null`, "{\"address\":\"\xc0\xae\"}",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		addr, nets, aerr := w.decodeWallet(body)
		if aerr != nil {
			checkRefusal(t, body, aerr)
			return
		}
		if len(nets) == 0 {
			t.Fatalf("accepted %q with no network", body)
		}
		var names []string
		for _, n := range nets {
			wn, ok := w.network(n.Network)
			if !ok || slices.Contains(names, n.Network) || n.Start != wn.Start {
				t.Fatalf("accepted %q on networks %+v: unknown, repeated or with the wrong start", body, nets)
			}
			if c, err := wn.Parse(addr); err != nil || c != addr {
				t.Fatalf("accepted %q as %q, which %s reads as %q (%v)", body, addr, n.Network, c, err)
			}
			names = append(names, n.Network)
		}
		again, err := json.Marshal(api.WalletRequest{Address: addr, Networks: names})
		if err != nil {
			t.Fatal(err)
		}
		addr2, nets2, aerr := w.decodeWallet(again)
		if aerr != nil || addr2 != addr || !slices.Equal(nets2, nets) {
			t.Fatalf("%q was accepted as %q on %v, but adding that again answers %q on %v (%v)", body, addr, nets, addr2, nets2, aerr)
		}
	})
}

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
			checkRefusal(t, body, aerr)
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
