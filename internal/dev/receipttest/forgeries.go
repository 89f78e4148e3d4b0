package receipttest

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// Forgeries are a World's genuine receipt, the trust root that pins it, and
// receipts forged from real anchors on the same local chains, each with
// what a verifier is given and the check that must reject it. Every
// verifier of keeper's receipts (package receipt/verify, `keeper verify`,
// the /verify page) runs the same table.
type Forgeries struct {
	World *World
	// Genuine is the genuine receipt (JSON); it verifies against Trust and
	// Endpoints, on Networks networks.
	Genuine []byte
	// Trust is the trust root that lists the log's key and keeper's two
	// accounts, as a plain JSON file; TrustNote is the same root signed by
	// the log's key, as /log/trust serves it.
	Trust, TrustNote []byte
	// Endpoints are the chains' JSON-RPC endpoints by chain name.
	Endpoints map[string][]string
	Networks  int
	Cases     []Case
}

// Case is one receipt handed to a verifier.
type Case struct {
	Name    string
	Receipt []byte // JSON
	// Trust is the trust root the verifier pins (plain JSON); nil: none,
	// nor a key.
	Trust []byte
	// Endpoints are the endpoints the verifier asks, by chain name.
	Endpoints map[string][]string
	// Check is the check that must reject the receipt (a receipt/verify
	// Check* name) on the anchor of chain Chain; "" when it verifies, on
	// Networks distinct networks.
	Check    string
	Chain    string
	Networks int
}

// Forgeries forges receipts from w's anchors and sends the transactions
// they need (stopped with the test): see the cases' names.
func (w *World) Forgeries(t testing.TB) *Forgeries {
	t.Helper()
	genuine, err := receipt.Parse(w.Receipt)
	require.NoError(t, err)
	evmNet, solNet := genuine.Anchors[0].Network, genuine.Anchors[1].Network
	root, err := trust.New(w.Log.VKey, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	require.NoError(t, err)
	root.List("etherlink", evmNet, w.Keeper.Hex(), 0, root.Log.ValidFor.Start)
	root.List("solana", solNet, w.SolanaKeeper, 0, root.Log.ValidFor.Start)
	note, err := trust.Sign(root, w.Log.Signer)
	require.NoError(t, err)
	f := &Forgeries{World: w, Genuine: w.Receipt, Trust: root.Marshal(), TrustNote: note, Networks: 2,
		Endpoints: map[string][]string{"etherlink": {w.EVMURL}, "solana": {w.SolanaURL}}}

	add := func(name, check, chain string, change func(*receipt.Receipt)) {
		r, err := receipt.Parse(w.Receipt)
		require.NoError(t, err)
		change(&r)
		raw, err := json.Marshal(r)
		require.NoError(t, err)
		f.Cases = append(f.Cases, Case{Name: name, Receipt: raw, Trust: f.Trust, Endpoints: f.Endpoints, Check: check, Chain: chain})
	}
	const etherlink, solana = "etherlink", "solana"
	add("the genuine receipt", "", "", func(*receipt.Receipt) {})
	f.Cases[0].Networks = 2
	add("block_time moved by 1 s", verify.CheckTime, etherlink, func(r *receipt.Receipt) {
		r.Anchors[0].BlockTime = r.Anchors[0].BlockTime.Add(time.Second)
	})
	add("block_time moved by 25 years", verify.CheckTime, solana, func(r *receipt.Receipt) {
		r.Anchors[1].BlockTime = r.Anchors[1].BlockTime.AddDate(-25, 0, 0)
	})
	add("existed_by earlier than any anchor", verify.CheckTime, "", func(r *receipt.Receipt) {
		r.ExistedBy = r.ExistedBy.AddDate(-25, 0, 0)
	})
	add("the account changed", verify.CheckAccount, etherlink, func(r *receipt.Receipt) { r.Anchors[0].Account = w.Intruder.Hex() })
	add("the EVM anchor re-sent from another funded account, the account changed to match", verify.CheckAccount, etherlink, func(r *receipt.Receipt) {
		resent(&r.Anchors[0], w.EVMByIntruderRow)
	})
	add("the Solana anchor re-sent from another funded account, the account changed to match", verify.CheckAccount, solana, func(r *receipt.Receipt) {
		resent(&r.Anchors[1], w.SolanaByIntruderRow)
	})
	add("an anchor listed twice", "", "", func(r *receipt.Receipt) { r.Anchors = append(r.Anchors, r.Anchors[0]) })
	f.Cases[len(f.Cases)-1].Networks = 2

	f.Cases = append(f.Cases, w.forkedLog(t, f))
	f.Cases = append(f.Cases, w.madeUpLog(t, f))

	// The intruder's re-sent anchor, named as keeper's, through an EVM node
	// that answers `from` as keeper's account: a verifier that believed the
	// node's `from` would pass it.
	evmProxy := RewritingProxy(t, w.EVMURL, fromRewriter(w.Keeper.Hex()))
	add("an EVM endpoint that answers with another from", verify.CheckAccount, etherlink, func(r *receipt.Receipt) {
		resent(&r.Anchors[0], w.EVMByIntruderRow)
		r.Anchors[0].Account = w.Keeper.Hex()
	})
	f.Cases[len(f.Cases)-1].Endpoints = map[string][]string{"etherlink": {evmProxy}, "solana": {w.SolanaURL}}

	// The intruder's signature, through a Solana node that answers with
	// keeper's genuine transaction under it: a verifier that did not check
	// the transaction's signatures would pass it.
	solProxy := RewritingProxy(t, w.SolanaURL, signatureSwapper(w.SolanaByIntruder, genuine.Anchors[1].TxRef))
	add("a Solana endpoint that answers with another transaction under the signature", verify.CheckTransaction, solana, func(r *receipt.Receipt) {
		r.Anchors[1].TxRef = w.SolanaByIntruder
	})
	f.Cases[len(f.Cases)-1].Endpoints = map[string][]string{"etherlink": {w.EVMURL}, "solana": {solProxy}}
	return f
}

// resent makes a the anchor row's transaction, as the chain states it.
func resent(a *receipt.Anchor, row receipt.AnchorRow) {
	a.TxRef, a.Block, a.BlockHash, a.BlockTime, a.Account = row.TxRef, row.Block, row.BlockHash, row.BlockTime, row.Account
}

// forkedLog is a receipt from a second history of the log under its own
// key (entry 5 differs), anchored on the EVM chain from the intruder's
// account, which the trust root does not list.
func (w *World) forkedLog(t testing.TB, f *Forgeries) Case {
	fork := w.Log.Fork()
	digest, salt := sha256.Sum256([]byte(w.File)), []byte("sixteen byte slt")
	for i := range 6 {
		entry := sha256.Sum256(fmt.Appendf(nil, "another client's entry %d", i))
		switch i {
		case 3:
			entry = evlog.EntryOf(salt, digest)
		case 5:
			entry = sha256.Sum256([]byte("an entry only the fork has"))
		}
		_, err := fork.Append(entry)
		require.NoError(t, err)
	}
	raw := w.anchoredReceipt(t, fork, 6, 3, digest, salt)
	return Case{Name: "a fork of the log under the same key, anchored from an account the trust root does not list", Receipt: raw,
		Trust: f.Trust, Endpoints: f.Endpoints, Check: verify.CheckAccount, Chain: "etherlink"}
}

// madeUpLog is a receipt from a log someone made up under another key
// (the same origin, one entry), anchored for real, checked with nothing
// pinned.
func (w *World) madeUpLog(t testing.TB, f *Forgeries) Case {
	l, err := NewLog(Origin)
	require.NoError(t, err)
	digest, salt := sha256.Sum256([]byte("a made-up contract")), []byte("sixteen byte slt")
	_, err = l.Append(evlog.EntryOf(salt, digest))
	require.NoError(t, err)
	raw := w.anchoredReceipt(t, l, 1, 0, digest, salt)
	return Case{Name: "a receipt from a made-up log under another key, no key pinned", Receipt: raw,
		Endpoints: f.Endpoints, Check: verify.CheckTrust}
}

// anchoredReceipt signs l's checkpoint of size, anchors it on the EVM chain
// from the intruder's account and returns the receipt of entry index.
func (w *World) anchoredReceipt(t testing.TB, l *Log, size, index uint64, digest [32]byte, salt []byte) []byte {
	_, err := l.Checkpoint(size)
	require.NoError(t, err)
	ref, err := l.Ref(size)
	require.NoError(t, err)
	row, err := AnchorEVM(t.Context(), w.EVMURL, w.IntruderKey, receipt.EVMCheckpointCalldata(ref))
	require.NoError(t, err)
	row.LogSize, row.Root = size, ref.Root
	r, err := receipt.Build(t.Context(), receipt.Rows{EvidenceID: "ev_forged", Digest: digest, Salt: salt, LogIndex: index, InLog: true,
		LogOrigin: Origin, LogKey: l.VKey, Anchors: []receipt.AnchorRow{row}, Checkpoints: l.Checkpoints()}, l)
	require.NoError(t, err)
	raw, err := json.Marshal(r)
	require.NoError(t, err)
	return raw
}

// RewritingProxy is a JSON-RPC endpoint (stopped with the test) that
// forwards every request to upstream after rewrite(request) and returns
// upstream's answer after rewrite(answer): a node that lies. It answers
// CORS preflights, so a browser page can ask it.
func RewritingProxy(t testing.TB, upstream string, rewrite func(request bool, body []byte) []byte) string {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, req *http.Request) {
		rw.Header().Set("Access-Control-Allow-Origin", "*")
		rw.Header().Set("Access-Control-Allow-Headers", "*")
		rw.Header().Set("Access-Control-Allow-Methods", "POST, OPTIONS")
		if req.Method == http.MethodOptions {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadRequest)
			return
		}
		up, err := http.NewRequestWithContext(req.Context(), http.MethodPost, upstream, bytes.NewReader(rewrite(true, body)))
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		up.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(up)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		answer, err := io.ReadAll(resp.Body)
		if err != nil {
			http.Error(rw, err.Error(), http.StatusBadGateway)
			return
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(resp.StatusCode)
		_, _ = rw.Write(rewrite(false, answer))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var evmFrom = regexp.MustCompile(`"from":\s*"0x[0-9a-fA-F]{40}"`)

// fromRewriter makes every `from` an EVM node answers name account (the
// transaction's signature still names its real sender).
func fromRewriter(account string) func(bool, []byte) []byte {
	return func(request bool, body []byte) []byte {
		if request {
			return body
		}
		return evmFrom.ReplaceAll(body, []byte(`"from":"`+account+`"`))
	}
}

// signatureSwapper asks a Solana node for transaction other whenever it is
// asked for sig (getTransaction): it answers with another transaction under
// the signature.
func signatureSwapper(sig, other string) func(bool, []byte) []byte {
	return func(request bool, body []byte) []byte {
		if !request {
			return body
		}
		var call map[string]any
		if json.Unmarshal(body, &call) != nil || call["method"] != "getTransaction" {
			return body
		}
		params, _ := call["params"].([]any)
		if len(params) == 0 || params[0] != sig {
			return body
		}
		params[0] = other
		out, err := json.Marshal(call)
		if err != nil {
			return body
		}
		return out
	}
}
