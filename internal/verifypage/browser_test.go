package verifypage_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	sol "github.com/gagliardetto/solana-go"
	solrpc "github.com/gagliardetto/solana-go/rpc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/dev/browsertest"
	"github.com/keeperhq/keeper/internal/dev/receipttest"
	"github.com/keeperhq/keeper/internal/verifypage"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
)

const everyV3Check = "checkpoint inclusion size consistency network transaction payload account status finality block time"

// page is the /verify page served with the local chains' endpoints, and
// what the tests hand it: the evidence file, a genuine receipt whose block
// times are the chains', and the trust root that lists keeper's accounts.
type page struct {
	browser context.Context
	w       *receipttest.World
	url     string
	dir     string
	file    string
	genuine receipt.Receipt
	receipt string // the genuine receipt's file
	trust   string // the trust root, signed by the log's key, as /log/trust serves it
	plain   string // the same root as plain JSON
}

func newPage(t *testing.T) *page {
	browser := browsertest.Start(t) // first: without Chromium there is nothing to start the chains for
	p := &page{browser: browser, w: receipttest.NewWorld(t), dir: t.TempDir()}
	var err error
	p.genuine, err = receipt.Parse(p.w.Receipt)
	require.NoError(t, err)
	networks := map[string]string{}
	for _, a := range p.genuine.Anchors {
		networks[a.Network] = map[string]string{"etherlink": p.w.EVMURL, "solana": p.w.SolanaURL}[a.Chain]
	}
	srv := httptest.NewServer(verifypage.Handler(func(context.Context) map[string]string { return networks }))
	t.Cleanup(srv.Close)
	p.url = srv.URL + "/verify"
	p.file = p.write(t, "contract.txt", []byte(p.w.File))
	raw, err := json.Marshal(p.genuine)
	require.NoError(t, err)
	p.receipt = p.write(t, "contract.txt.receipt.json", raw)

	root, err := trust.New(p.w.Log.VKey, time.Now())
	require.NoError(t, err)
	for _, a := range p.genuine.Anchors {
		root.List(a.Chain, a.Network, a.Account, 0, time.Now())
	}
	signed, err := trust.Sign(root, p.w.Log.Signer)
	require.NoError(t, err)
	p.trust = p.write(t, "trust.note", signed)
	p.plain = p.write(t, "trust.json", root.Marshal())
	return p
}

func (p *page) write(t *testing.T, name string, content []byte) string {
	t.Helper()
	f := filepath.Join(p.dir, name)
	require.NoError(t, os.WriteFile(f, content, 0o600))
	return f
}

// forge writes the genuine receipt as change leaves it.
func (p *page) forge(t *testing.T, name string, change func(*receipt.Receipt)) string {
	t.Helper()
	raw, err := json.Marshal(p.genuine)
	require.NoError(t, err)
	r, err := receipt.Parse(raw)
	require.NoError(t, err)
	change(&r)
	raw, err = json.Marshal(r)
	require.NoError(t, err)
	return p.write(t, name, raw)
}

// run verifies on the page; the local EVM chain calls itself EtherLink
// mainnet, so its endpoint is always typed in (the page would ask the
// public one).
func (p *page) run(t *testing.T, r browsertest.Run) browsertest.Outcome {
	t.Helper()
	r.Page, r.File = p.url, p.file
	if r.Receipt == "" {
		r.Receipt = p.receipt
	}
	if r.Endpoints == nil {
		r.Endpoints = map[string]string{}
	}
	if r.Endpoints["etherlink"] == "" {
		r.Endpoints["etherlink"] = p.w.EVMURL
	}
	out := browsertest.Verify(t, p.browser, r)
	t.Logf("result=%s check=%s %s | %s | %s | %s", out.Result, out.Check, out.Text, out.Warning, out.Pinned, out.Bound)
	for _, c := range out.Chains {
		t.Logf("  %-9s %-4s check=%-11s passed=[%s] %s", c.Chain, c.Result, c.Check, c.Passed, c.Text)
	}
	return out
}

// TestThePageVerifiesAVersionThreeReceiptOnTheLocalChains has headless
// Chromium run the page, served with the local chains' endpoints, on a
// receipt anchored for real (receipttest.World): the checkpoint's Ed25519
// signature checked by WebCrypto against the pinned trust root's key,
// inclusion and consistency proofs, and per anchor what the chain says: the
// EVM transaction rehashed and its sender recovered from its signature, the
// Solana transaction's signatures verified, the payload, the block and its
// time; as JSON or as a tlog-proof. Each forged receipt fails at its check.
func TestThePageVerifiesAVersionThreeReceiptOnTheLocalChains(t *testing.T) {
	p := newPage(t)
	w := p.w

	t.Run("genuine, with the signed trust root pinned", func(t *testing.T) {
		out := p.run(t, browsertest.Run{Trust: p.trust})
		assert.Equal(t, "ok", out.Result, out.Text)
		assert.Empty(t, out.Warning)
		for _, chain := range []string{"etherlink", "solana"} {
			result, check, passed := out.Chain(t, chain)
			assert.Equal(t, "ok", result, "%s failed at %s", chain, check)
			assert.Equal(t, everyV3Check, passed, chain)
		}
		assert.Contains(t, out.Pinned, w.Log.VKey, "the page prints the full key it checked against")
		assert.Contains(t, out.Pinned, "signed by keeper.test/log+")
		earliest := p.genuine.Anchors[0].BlockTime
		if p.genuine.Anchors[1].BlockTime.Before(earliest) {
			earliest = p.genuine.Anchors[1].BlockTime
		}
		assert.Contains(t, out.Bound, "existed no later than "+earliest.Format(time.RFC3339))
		assert.Contains(t, out.Text, "verified on 2 network(s)")
		assert.Contains(t, out.Text, "1 of them a TEST NETWORK", "the local Solana devnet is no known mainnet")
		for _, c := range out.Chains {
			assert.Contains(t, c.Text, "made at ", c.Chain)
		}
		assert.Contains(t, out.Chains[1].Text, "TEST NETWORK")
	})

	t.Run("genuine, with the trust root as plain JSON", func(t *testing.T) {
		out := p.run(t, browsertest.Run{Trust: p.plain})
		assert.Equal(t, "ok", out.Result, out.Text)
		assert.Contains(t, out.Pinned, "plain JSON")
	})

	t.Run("genuine, with the log key and accounts", func(t *testing.T) {
		out := p.run(t, browsertest.Run{LogKey: w.Log.VKey, Accounts: "etherlink=" + p.genuine.Anchors[0].Account + " solana=" + p.genuine.Anchors[1].Account})
		assert.Equal(t, "ok", out.Result, out.Text)
	})

	t.Run("the log key without accounts rejects every anchor's sender", func(t *testing.T) {
		out := p.run(t, browsertest.Run{LogKey: w.Log.VKey})
		assert.Equal(t, "account", out.Check)
		assert.Contains(t, out.Chains[0].Text, "lists no anchoring account")
	})

	t.Run("nothing pinned is not verified", func(t *testing.T) {
		out := p.run(t, browsertest.Run{})
		assert.Equal(t, "fail", out.Result)
		assert.Equal(t, "trust", out.Check)
		assert.Contains(t, out.Text, "not verified: no key pinned")
		assert.Empty(t, out.Chains)
	})

	t.Run("the insecure option says so on every line", func(t *testing.T) {
		out := p.run(t, browsertest.Run{Insecure: true})
		assert.Equal(t, "ok", out.Result, out.Text)
		assert.Contains(t, out.Text, "INSECURE")
		assert.Contains(t, out.Warning, "INSECURE")
		assert.Contains(t, out.Bound, "INSECURE")
		for _, c := range out.Chains {
			assert.Contains(t, c.Text, "INSECURE", c.Chain)
		}
		assert.Contains(t, out.Pinned, w.Log.VKey)
	})

	t.Run("a trust root signed by another key does not open", func(t *testing.T) {
		other, err := receipttest.NewLog(receipttest.Origin)
		require.NoError(t, err)
		raw, err := os.ReadFile(p.trust)
		require.NoError(t, err)
		text := string(raw[:bytes.Index(raw, []byte("\n\n"))+1])
		forged, err := other.Signer.SignText(text)
		require.NoError(t, err)
		out := p.run(t, browsertest.Run{Trust: p.write(t, "other.note", forged)})
		assert.Equal(t, "trust", out.Check)
		assert.Contains(t, out.Text, "no signature by the key")
	})

	t.Run("another log key fails the checkpoint", func(t *testing.T) {
		other, err := receipttest.NewLog(receipttest.Origin)
		require.NoError(t, err)
		out := p.run(t, browsertest.Run{LogKey: other.VKey, Accounts: "etherlink=" + w.Keeper.Hex()})
		assert.Equal(t, "fail", out.Result)
		assert.Equal(t, "checkpoint", out.Check)
		for _, c := range out.Chains {
			assert.Equal(t, "checkpoint", c.Check, c.Chain)
			assert.Contains(t, c.Text, "the checkpoint has no signature by the key keeper.test/log+", c.Chain)
		}
	})

	t.Run("a checkpoint edited after signing fails its signature", func(t *testing.T) {
		out := p.run(t, browsertest.Run{Trust: p.trust, Receipt: p.forge(t, "edited.json", func(r *receipt.Receipt) {
			r.Log.Checkpoint = strings.Replace(r.Log.Checkpoint, "\n10\n", "\n11\n", 1)
		})})
		assert.Equal(t, "checkpoint", out.Check)
		assert.Contains(t, out.Chains[0].Text, "the checkpoint's signature does not verify with the key keeper.test/log+")
	})

	t.Run("every forged receipt of the shared table fails at its check", func(t *testing.T) {
		f := w.Forgeries(t)
		for i, c := range f.Cases {
			t.Run(c.Name, func(t *testing.T) {
				run := browsertest.Run{Receipt: p.write(t, fmt.Sprintf("case-%d.json", i), c.Receipt), Endpoints: map[string]string{}}
				if c.Trust != nil {
					run.Trust = p.write(t, fmt.Sprintf("case-%d-trust.json", i), c.Trust)
				}
				r, err := receipt.Parse(c.Receipt)
				require.NoError(t, err)
				for _, a := range r.Anchors { // the page has a field for each network the receipt names
					run.Endpoints[a.Chain] = strings.Join(c.Endpoints[a.Chain], " ")
				}
				out := p.run(t, run)
				if c.Check == "" {
					assert.Equal(t, "ok", out.Result, out.Text)
					assert.Contains(t, out.Text, fmt.Sprintf("verified on %d network(s)", c.Networks))
					return
				}
				assert.Equal(t, "fail", out.Result, out.Text)
				assert.Equal(t, c.Check, out.Check, out.Text)
				assert.NotContains(t, out.Text, "verified on")
				if c.Chain != "" {
					result, check, _ := out.Chain(t, c.Chain)
					assert.Equal(t, "fail", result)
					assert.Equal(t, c.Check, check)
				}
			})
		}
	})

	t.Run("a Solana endpoint splicing the asked signature onto another transaction fails its signature", func(t *testing.T) {
		other, err := solrpc.New(w.SolanaURL).GetTransaction(t.Context(), mustSig(t, w.SolanaByIntruder),
			&solrpc.GetTransactionOpts{Encoding: "base64", Commitment: solrpc.CommitmentConfirmed})
		require.NoError(t, err)
		spliced := other.Transaction.GetBinary()
		asked := mustSig(t, p.genuine.Anchors[1].TxRef)
		copy(spliced[1:65], asked[:])
		liar := receipttest.RewritingProxy(t, w.SolanaURL, func(request bool, body []byte) []byte {
			var answer map[string]any
			if request || json.Unmarshal(body, &answer) != nil {
				return body
			}
			if tx, ok := answer["result"].(map[string]any); ok && tx["transaction"] != nil {
				tx["transaction"] = []string{base64.StdEncoding.EncodeToString(spliced), "base64"}
				body, _ = json.Marshal(answer)
			}
			return body
		})
		out := p.run(t, browsertest.Run{Trust: p.trust, Endpoints: map[string]string{"solana": liar}})
		assert.Equal(t, "transaction", out.Check)
		assert.Contains(t, out.Chains[1].Text, "signature 1 does not verify")
	})

	t.Run("endpoints that disagree fail, endpoints that agree pass", func(t *testing.T) {
		out := p.run(t, browsertest.Run{Trust: p.trust, Endpoints: map[string]string{"etherlink": w.EVMURL + " " + w.ForkURL}})
		assert.Equal(t, "endpoints", out.Check)
		assert.Contains(t, out.Chains[0].Text, "the endpoints disagree on the block")
		same := receipttest.RewritingProxy(t, w.EVMURL, func(_ bool, body []byte) []byte { return body })
		out = p.run(t, browsertest.Run{Trust: p.trust, Endpoints: map[string]string{"etherlink": w.EVMURL + " " + same}})
		assert.Equal(t, "ok", out.Result, out.Text)
		_, _, passed := out.Chain(t, "etherlink")
		assert.Equal(t, "checkpoint inclusion size consistency network transaction endpoints payload account status finality block time", passed)
	})

	t.Run("a flipped bit in the inclusion proof fails the inclusion", func(t *testing.T) {
		out := p.run(t, browsertest.Run{Trust: p.trust, Receipt: p.forge(t, "inclusion.json", func(r *receipt.Receipt) {
			b, _ := hex.DecodeString(r.Log.Inclusion[0])
			b[31] ^= 1
			r.Log.Inclusion[0] = hex.EncodeToString(b)
		})})
		assert.Equal(t, "inclusion", out.Check)
		_, _, passed := out.Chain(t, "etherlink")
		assert.Equal(t, "checkpoint", passed)
	})

	t.Run("a tampered consistency proof fails", func(t *testing.T) {
		out := p.run(t, browsertest.Run{Trust: p.trust, Receipt: p.forge(t, "consistency.json", func(r *receipt.Receipt) {
			b, _ := hex.DecodeString(r.Anchors[0].Consistency[0])
			b[0] ^= 1
			r.Anchors[0].Consistency[0] = hex.EncodeToString(b)
		})})
		assert.Equal(t, "consistency", out.Check)
		_, _, passed := out.Chain(t, "etherlink")
		assert.Equal(t, "checkpoint inclusion size", passed)
	})

	t.Run("a payload naming another log key fails", func(t *testing.T) {
		out := p.run(t, browsertest.Run{Trust: p.trust, Receipt: p.forge(t, "other-key.json", func(r *receipt.Receipt) { r.Anchors[0].TxRef = w.EVMOtherKey })})
		assert.Equal(t, "payload", out.Check)
	})

	t.Run("a tlog-proof verifies as the receipt does", func(t *testing.T) {
		proof, err := p.genuine.TLogProof()
		require.NoError(t, err)
		out := p.run(t, browsertest.Run{Trust: p.trust, Receipt: p.write(t, "contract.txt.tlog-proof", []byte(proof))})
		assert.Equal(t, "ok", out.Result, out.Text)
		_, _, passed := out.Chain(t, "solana")
		assert.Equal(t, everyV3Check, passed)

		require.False(t, p.genuine.ExistedBy.IsZero(), "the receipt states the bound it proves")
		moved := p.genuine
		moved.ExistedBy = moved.ExistedBy.Add(-time.Second)
		proof, err = moved.TLogProof()
		require.NoError(t, err)
		out = p.run(t, browsertest.Run{Trust: p.trust, Receipt: p.write(t, "moved.tlog-proof", []byte(proof))})
		assert.Equal(t, "time", out.Check, "a tlog-proof's existed_by is checked as a receipt's")
	})

	t.Run("a version 2 receipt verifies against the pinned accounts", func(t *testing.T) {
		digest := sha256.Sum256([]byte(w.File))
		salt, err := hex.DecodeString(p.genuine.Salt)
		require.NoError(t, err)
		leaves := [][32]byte{merkle.LeafHash([]byte("a neighbour")), merkle.LeafHash(receipt.Leaf(salt, digest))}
		tree, err := merkle.FromLeafHashes([]merkle.Hash{leaves[0], leaves[1]})
		require.NoError(t, err)
		w.Log.AddBatch(1, leaves)
		row, err := receipttest.AnchorEVM(t.Context(), w.EVMURL, w.KeeperKey, receipt.EVMCalldata(tree.Root()))
		require.NoError(t, err)
		row.Root, row.BatchID, row.LeafIndex, row.BatchSize = tree.Root(), 1, 1, 2
		v2, err := receipt.Build(t.Context(), receipt.Rows{EvidenceID: "ev_v2", Digest: digest, Salt: salt, Anchors: []receipt.AnchorRow{row}}, w.Log)
		require.NoError(t, err)
		require.Equal(t, receipt.VersionSalted, v2.Version)
		raw, err := json.Marshal(v2)
		require.NoError(t, err)
		out := p.run(t, browsertest.Run{Receipt: p.write(t, "v2.json", raw), Trust: p.trust})
		assert.Equal(t, "ok", out.Result, out.Text)
		_, _, passed := out.Chain(t, "etherlink")
		assert.Equal(t, "proof network transaction payload account status finality block time", passed)
		out = p.run(t, browsertest.Run{Receipt: p.write(t, "v2.json", raw)})
		assert.Equal(t, "trust", out.Check, "a version 2 receipt too needs what it is checked against")
	})
}

// TestThePageAsksPublicEndpointsAndOnlyOffersKeepers has the page served
// by a keeper configured with its own EtherLink mainnet node: the field
// holds the public endpoint, keeper's is offered beside it; a network with
// no public endpoint gets keeper's.
func TestThePageAsksPublicEndpointsAndOnlyOffersKeepers(t *testing.T) {
	browser := browsertest.Start(t)
	srv := httptest.NewServer(verifypage.Handler(func(context.Context) map[string]string {
		return map[string]string{"eip155:42793": "http://127.0.0.1:8545", "solana:LocalGenesis": "http://127.0.0.1:8899"}
	}))
	t.Cleanup(srv.Close)
	r := `{"version":3,"tree":"rfc6962-sha256","digest":"` + strings.Repeat("a", 64) + `","salt":"` + strings.Repeat("b", 32) + `",` +
		`"log":{"origin":"o","key":"k","index":0,"checkpoint":"c","inclusion":[]},"anchors":[` +
		`{"kind":"checkpoint","chain":"etherlink","network":"eip155:42793","consistency":[]},` +
		`{"kind":"checkpoint","chain":"solana","network":"solana:LocalGenesis","consistency":[]}]}`
	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(tab, 20*time.Second)
	defer cancelTimeout()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/verify"), chromedp.SetValue(chromedp.CSS("#receipt-text"), r),
		chromedp.Evaluate[chromedp.Void](`document.querySelector("#receipt-text").dispatchEvent(new Event("input"))`),
		chromedp.WaitVisible(chromedp.CSS("#endpoints input"))))
	got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`({
		evm: document.querySelector('#endpoints input[data-chain="etherlink"]').value,
		sol: document.querySelector('#endpoints input[data-chain="solana"]').value,
		labels: document.querySelector("#endpoints").textContent,
	})`))
	require.NoError(t, err)
	assert.Equal(t, "https://node.mainnet.etherlink.com", got["evm"], "the public endpoint is asked by default")
	assert.Contains(t, got["labels"], "uses http://127.0.0.1:8545", "keeper's endpoint is offered")
	evm := `#endpoints input[data-chain="etherlink"]`
	value := func() string {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('`+evm+`').value`))
		require.NoError(t, err)
		return v
	}
	click := func(text string) {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`Array.from(document.querySelectorAll("#endpoints button")).find((b) => b.textContent === "`+text+`").click()`))
		require.NoError(t, err)
	}
	click("ask it too")
	assert.Equal(t, "https://node.mainnet.etherlink.com http://127.0.0.1:8545", value(), "asked beside the public one, which it must agree with")
	click("ask only it")
	assert.Equal(t, "http://127.0.0.1:8545", value(), "only when the user says so")
	assert.Equal(t, "http://127.0.0.1:8899", got["sol"], "no public endpoint is known for a local network")
	assert.Contains(t, got["labels"], "TEST NETWORK")
}

func mustSig(t *testing.T, s string) sol.Signature {
	t.Helper()
	sig, err := sol.SignatureFromBase58(s)
	require.NoError(t, err)
	return sig
}
