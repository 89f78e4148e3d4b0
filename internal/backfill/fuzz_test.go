package backfill_test

import (
	"encoding/json"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/keeperhq/keeper/api"
	"github.com/keeperhq/keeper/internal/backfill"
	"github.com/keeperhq/keeper/internal/backfill/evmscan"
	"github.com/keeperhq/keeper/internal/backfill/solscan"
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

// FuzzDecodeWallet feeds arbitrary bodies to the wallet decoder: it must
// never panic; what it accepts names configured networks once each, with an
// address each of them reads as itself; and adding that canonical address
// again on those networks is the same request.
func FuzzDecodeWallet(f *testing.F) {
	w := &backfill.HTTP{Networks: []backfill.Network{
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
		addr, nets, aerr := w.DecodeWallet(body)
		if aerr != nil {
			checkRefusal(t, body, aerr)
			return
		}
		if len(nets) == 0 {
			t.Fatalf("accepted %q with no network", body)
		}
		var names []string
		for _, n := range nets {
			wn, ok := w.Network(n.Network)
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
		addr2, nets2, aerr := w.DecodeWallet(again)
		if aerr != nil || addr2 != addr || !slices.Equal(nets2, nets) {
			t.Fatalf("%q was accepted as %q on %v, but adding that again answers %q on %v (%v)", body, addr, nets, addr2, nets2, aerr)
		}
	})
}
