package verifypage_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/dev/browsertest"
	"github.com/keeperhq/keeper/internal/dev/conformance"
	"github.com/keeperhq/keeper/internal/dev/receipttest"
	"github.com/keeperhq/keeper/internal/verifypage"
	"github.com/keeperhq/keeper/receipt"
	"github.com/keeperhq/keeper/receipt/verify"
)

// files are a corpus vector written out as a user holds them, with the
// endpoints that replay its chains' answers.
type files struct {
	v                    conformance.Vector
	dir                  string
	file, receipt, trust string // paths ("" when the vector gives none)
	endpoints            map[string]string
}

// vectorFiles writes the corpus vector name to files and serves its chains.
func vectorFiles(t *testing.T, name string) files {
	t.Helper()
	v, err := conformance.Read(filepath.Join(corpus, name+".json"))
	require.NoError(t, err)
	f := files{v: v, dir: t.TempDir(), endpoints: map[string]string{}}
	ext := map[string]string{conformance.FormatJSON: ".receipt.json", conformance.FormatTLogProof: ".tlog-proof"}[v.ReceiptFormat]
	f.receipt = f.write(t, "contract.txt"+ext, []byte(v.Receipt))
	if v.Trust != "" {
		f.trust = f.write(t, "trust.json", []byte(v.Trust))
	}
	if v.File != "" {
		content, err := hex.DecodeString(v.File)
		require.NoError(t, err)
		f.file = f.write(t, "contract.txt", content)
	}
	for chain, urls := range conformance.Serve(t, v) {
		f.endpoints[chain] = strings.Join(urls, " ")
	}
	return f
}

func (f files) write(t *testing.T, name string, content []byte) string {
	t.Helper()
	p := filepath.Join(f.dir, name)
	require.NoError(t, os.WriteFile(p, content, 0o600))
	return p
}

// run is a run of the page at url on f, as changed by change.
func (f files) run(t *testing.T, browser context.Context, url string, change func(*browsertest.Run)) browsertest.Outcome {
	t.Helper()
	r := browsertest.Run{Page: url, File: f.file, Receipt: f.receipt, Trust: f.trust, Endpoints: f.endpoints}
	if change != nil {
		change(&r)
	}
	out := browsertest.Verify(t, browser, r)
	t.Logf("result=%s check=%s %s | %s | %s | %s", out.Result, out.Check, out.Text, out.Pinned, out.Digest["text"], out.Bound)
	for _, c := range out.Chains {
		t.Logf("  %-9s %-4s check=%-11s %s", c.Chain, c.Result, c.Check, c.Text)
	}
	return out
}

// logKey is the log key a trust root names.
func logKey(t *testing.T, root string) string {
	t.Helper()
	body, _, _ := strings.Cut(root, "\n\n\u2014 ")
	var r struct{ Log struct{ Key string } }
	require.NoError(t, json.Unmarshal([]byte(body), &r))
	require.NotEmpty(t, r.Log.Key)
	return r.Log.Key
}

func servePage(t *testing.T, networks map[string]string) string {
	t.Helper()
	srv := httptest.NewServer(verifypage.Handler(func(context.Context) map[string]string { return networks }))
	t.Cleanup(srv.Close)
	return srv.URL + "/verify"
}

// TestAUserVerifiesAFileAndItsReceiptOnThePage has Chromium run the page
// as a user does, on corpus vectors whose chains' answers are replayed: the
// file is hashed in the browser, the receipt and trust root read from
// their files, and what the verifier reports is shown per anchor.
func TestAUserVerifiesAFileAndItsReceiptOnThePage(t *testing.T) {
	browser := browsertest.Start(t)
	page := servePage(t, nil)
	f := vectorFiles(t, "v3-with-file")

	t.Run("genuine", func(t *testing.T) {
		out := f.run(t, browser, page, nil)
		assert.Equal(t, "ok", out.Result, out.Text)
		assert.Equal(t, "ok", out.Digest["result"])
		assert.Contains(t, out.Text, "verified on 2 network(s)")
		assert.Contains(t, out.Pinned, "plain JSON")
		assert.Contains(t, out.Pinned, logKey(t, f.v.Trust), "the page prints the full key it checked against")
		assert.Equal(t, "the file existed no later than "+f.v.Expect.ExistedBy+
			", by the clock of EtherLink mainnet (eip155:42793), Solana mainnet-beta (solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp)", out.Bound)
		for _, chain := range []string{"etherlink", "solana"} {
			result, check := out.Chain(t, chain)
			assert.Equal(t, "ok", result, "%s failed at %s", chain, check)
		}
		assert.Contains(t, out.Chains[0].Text, "etherlink on EtherLink mainnet (eip155:42793): ok")
	})

	t.Run("a changed file fails its digest", func(t *testing.T) {
		changed := f.write(t, "changed.txt", []byte("another file"))
		out := f.run(t, browser, page, func(r *browsertest.Run) { r.File = changed })
		assert.Equal(t, "fail", out.Result)
		assert.Equal(t, "digest", out.Check)
		assert.Equal(t, "fail", out.Digest["result"])
		assert.NotContains(t, out.Bound, "existed no later than")
	})

	t.Run("nothing pinned is not verified", func(t *testing.T) {
		out := f.run(t, browser, page, func(r *browsertest.Run) { r.Trust = "" })
		assert.Equal(t, "fail", out.Result)
		assert.Equal(t, "trust", out.Check)
		assert.Contains(t, out.Text, "NOT verified: trust failed — nothing pinned")
		assert.Empty(t, out.Pinned)
	})

	t.Run("a forged receipt shows the check that fails", func(t *testing.T) {
		forged := vectorFiles(t, "inclusion-path-byte-changed")
		out := forged.run(t, browser, page, nil)
		assert.Equal(t, "fail", out.Result)
		assert.Equal(t, "inclusion", out.Check)
		assert.Contains(t, out.Text, "NOT verified: inclusion failed")
	})

	t.Run("endpoints that disagree fail the anchor", func(t *testing.T) {
		disagree := vectorFiles(t, "etherlink-endpoints-disagree-on-block")
		require.Len(t, strings.Fields(disagree.endpoints["etherlink"]), 2)
		out := disagree.run(t, browser, page, nil)
		assert.Equal(t, "endpoints", out.Check)
		result, check := out.Chain(t, "etherlink")
		assert.Equal(t, "fail", result)
		assert.Equal(t, "endpoints", check)
		assert.Contains(t, out.Chains[0].Text, "FAIL at endpoints")
	})

	t.Run("a tlog-proof verifies as the receipt does", func(t *testing.T) {
		proof := vectorFiles(t, "v3-both-chains-tlog-proof")
		out := proof.run(t, browser, page, nil)
		assert.Equal(t, "ok", out.Result, out.Text)
		assert.Len(t, out.Chains, 2)
	})
}

// TestFilesDroppedOnThePageAreVerified drops the file, its receipt and the
// trust root on the page's drop zones, as a user drags them in.
func TestFilesDroppedOnThePageAreVerified(t *testing.T) {
	browser := browsertest.Start(t)
	f := vectorFiles(t, "v3-with-file")
	tab := browsertest.Open(t, browser, servePage(t, nil))
	drop := func(zone, name, path string) {
		content, err := os.ReadFile(path)
		require.NoError(t, err)
		bytes, err := json.Marshal(content) // base64
		require.NoError(t, err)
		_, err = chromedp.Run(tab, chromedp.Evaluate[chromedp.Void](`(() => {
			const dt = new DataTransfer();
			dt.items.add(new File([Uint8Array.from(atob(`+string(bytes)+`), (c) => c.charCodeAt(0))], "`+name+`"));
			document.getElementById("`+zone+`").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true }));
		})()`))
		require.NoError(t, err)
	}
	drop("file-drop", "contract.txt", f.file)
	drop("receipt-drop", "contract.txt.receipt.json", f.receipt)
	drop("trust-drop", "trust.json", f.trust)
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Poll[chromedp.Void](`document.querySelector("#trust").value !== ""`),
		chromedp.WaitVisible(chromedp.CSS(`#endpoints input[data-chain="solana"]`))))
	for chain, urls := range f.endpoints {
		require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#endpoints input[data-chain="`+chain+`"]`), urls)))
	}
	info, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#file-info").textContent`))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(info, "contract.txt, "), info)
	out := browsertest.Press(t, tab)
	assert.Equal(t, "ok", out.Result, out.Text)
	assert.Equal(t, "ok", out.Digest["result"], "the dropped file was hashed")
}

// TestThePageCallsASignedTrustRootSelfSignedUnlessItsKeyIsPinned: a signed
// root names the key that signed it, so it vouches only for itself; the
// log key pinned beside it, from wherever the user trusts, ties it to the
// log.
func TestThePageCallsASignedTrustRootSelfSignedUnlessItsKeyIsPinned(t *testing.T) {
	browser := browsertest.Start(t)
	page := servePage(t, nil)
	f := vectorFiles(t, "v3-signed-trust-root")

	out := f.run(t, browser, page, nil)
	assert.Equal(t, "ok", out.Result, out.Text)
	assert.Contains(t, out.Pinned, "self-signed")

	out = f.run(t, browser, page, func(r *browsertest.Run) { r.LogKey = logKey(t, f.v.Trust) })
	assert.Equal(t, "ok", out.Result, out.Text)
	assert.Contains(t, out.Pinned, "signed by the log key you pinned")
	assert.NotContains(t, out.Pinned, "self-signed")

	other := vectorFiles(t, "signed-root-by-another-key")
	out = other.run(t, browser, page, func(r *browsertest.Run) { r.LogKey = logKey(t, f.v.Trust) })
	assert.Equal(t, "trust", out.Check, "a root signed by another key than the one pinned")
}

// TestThePageBoundsTheTimeOnlyByClocksTheUserTrusts: an anchor on a test
// network verifies, but proves a time only when the user trusts that
// network's clock; the page offers to, saying what it is.
func TestThePageBoundsTheTimeOnlyByClocksTheUserTrusts(t *testing.T) {
	browser := browsertest.Start(t)
	page := servePage(t, nil)
	f := vectorFiles(t, "v3-testnet-trusted-clock")
	network := f.v.Clocks[0]

	out := f.run(t, browser, page, nil)
	assert.Equal(t, "ok", out.Result, out.Text)
	assert.Equal(t, "no trusted clock: no time bound", strings.Split(out.Bound, " (")[0])
	assert.Contains(t, out.Text, "no trusted clock")
	assert.NotContains(t, out.Text, "existed no later than")
	assert.Contains(t, out.Chains[0].Text, "test network")

	out = f.run(t, browser, page, func(r *browsertest.Run) { r.Clocks = network })
	assert.True(t, strings.HasPrefix(out.Bound, "the file existed no later than "+f.v.Expect.ExistedBy+", by the clock of "), out.Bound)
	assert.Contains(t, out.Bound, network)

	tab := browsertest.Open(t, browser, page)
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	label, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(() => {
		const text = `+mustJSON(t, f.v.Receipt)+`;
		document.querySelector("#receipt-text").value = text;
		document.querySelector("#receipt-text").dispatchEvent(new Event("input"));
		return document.querySelector('#clock-choices input[data-clock="`+network+`"]').parentElement.textContent;
	})()`))
	require.NoError(t, err)
	assert.Contains(t, label, "TEST NETWORK or local chain", "the choice to trust a test network's clock says what it is")
}

// TestAVersionOneAnchorIsNamedByTheNetworkItsEndpointsAnswerFor: a
// version 1 anchor names no network; the page does not presume one before
// the verifier finds it.
func TestAVersionOneAnchorIsNamedByTheNetworkItsEndpointsAnswerFor(t *testing.T) {
	browser := browsertest.Start(t)
	f := vectorFiles(t, "v1-etherlink-pre-log")
	out := f.run(t, browser, servePage(t, nil), nil)
	assert.Equal(t, "ok", out.Result, out.Text)
	require.Len(t, out.Chains, 1)
	assert.Equal(t, "eip155:42793", out.Chains[0].Network, "the network its endpoint answered for")
	assert.Contains(t, out.Chains[0].Text, "etherlink on EtherLink mainnet (eip155:42793)")
}

// TestThePageAsksPublicEndpointsAndOnlyOffersKeepers has the page served
// by a keeper configured with its own nodes: a network's fields hold the
// public endpoints (both of Solana mainnet-beta's), keeper's is offered
// beside them; a network with no public endpoint gets keeper's.
func TestThePageAsksPublicEndpointsAndOnlyOffersKeepers(t *testing.T) {
	browser := browsertest.Start(t)
	const keepers, keepersLocal = "http://127.0.0.1:8545", "http://127.0.0.1:8546"
	tab := browsertest.Open(t, browser, servePage(t, map[string]string{
		"eip155:42793": keepers, "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp": "https://api.mainnet-beta.solana.com", receipt.LocalEVMNetwork: keepersLocal,
	}))
	ctx, cancel := context.WithTimeout(tab, 10*time.Second)
	defer cancel()
	fields := func(r string) map[string]string {
		got, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`(() => {
			document.querySelector("#receipt-text").value = `+mustJSON(t, r)+`;
			document.querySelector("#receipt-text").dispatchEvent(new Event("input"));
			const field = (chain) => (document.querySelector('#endpoints input[data-chain="' + chain + '"]') || {}).value;
			return { evm: field("etherlink"), sol: field("solana"), labels: document.querySelector("#endpoints").textContent };
		})()`))
		require.NoError(t, err)
		return got
	}
	got := fields(vectorFiles(t, "v3-both-chains").v.Receipt)
	assert.Equal(t, "https://node.mainnet.etherlink.com", got["evm"], "the public endpoint is asked by default")
	assert.Equal(t, "https://api.mainnet-beta.solana.com https://solana-rpc.publicnode.com", got["sol"],
		"both public endpoints of Solana mainnet-beta, which must agree")
	assert.Contains(t, got["labels"], "uses "+keepers, "keeper's endpoint is offered")
	assert.Equal(t, 1, strings.Count(got["labels"], "uses "), "keeper's endpoint that is a public one is not offered again")
	value := func() string {
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('#endpoints input[data-chain="etherlink"]').value`))
		require.NoError(t, err)
		return v
	}
	click := func(text string) {
		_, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](`Array.from(document.querySelectorAll("#endpoints button")).find((b) => b.textContent === "`+text+`").click()`))
		require.NoError(t, err)
	}
	click("ask it too")
	assert.Equal(t, "https://node.mainnet.etherlink.com "+keepers, value(), "asked beside the public one, which it must agree with")
	click("ask only it")
	assert.Equal(t, keepers, value(), "only when the user says so")

	got = fields(vectorFiles(t, "v3-testnet").v.Receipt)
	assert.Equal(t, keepersLocal, got["evm"], "no public endpoint is known for a local network")
	assert.Contains(t, got["labels"], "No public endpoint is known for this network")
	assert.Contains(t, got["labels"], "test network")
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// TestThePageVerifiesOnTheLocalChainsServedAndSavedAsAFile has the page,
// served by a keeper of the local chains and then saved to disk, verify a
// receipt anchored for real (receipttest.World) against the chains' own
// nodes, which answer the browser's CORS preflights; a forgery the nodes
// expose fails at its check.
func TestThePageVerifiesOnTheLocalChainsServedAndSavedAsAFile(t *testing.T) {
	browser := browsertest.Start(t) // first: without Chromium there is nothing to start the chains for
	w := receipttest.NewWorld(t)
	forged := w.Forgeries(t)
	genuine, err := receipt.Parse(w.Receipt)
	require.NoError(t, err)
	networks := map[string]string{}
	for _, a := range genuine.Anchors {
		networks[a.Network] = map[string]string{"etherlink": w.EVMURL, "solana": w.SolanaURL}[a.Chain]
	}
	f := files{dir: t.TempDir()}
	f.file = f.write(t, "contract.txt", []byte(w.File))
	f.receipt = f.write(t, "contract.txt.receipt.json", w.Receipt)
	f.trust = f.write(t, "trust.note", forged.TrustNote)
	served := servePage(t, networks)
	saved := "file://" + f.write(t, "keeper-verify.html", verifypage.Render(networks))

	for page, url := range map[string]string{"served": served, "saved as a file": saved} {
		t.Run(page, func(t *testing.T) {
			out := f.run(t, browser, url, nil) // the local chains' endpoints are prefilled: no public one serves them
			assert.Equal(t, "ok", out.Result, out.Text)
			assert.Equal(t, "ok", out.Digest["result"])
			for _, chain := range []string{"etherlink", "solana"} {
				result, check := out.Chain(t, chain)
				assert.Equal(t, "ok", result, "%s failed at %s", chain, check)
			}
			for _, c := range out.Chains {
				assert.Contains(t, c.Text, "a test ", "a local chain is no mainnet")
			}
			assert.Contains(t, out.Pinned, "self-signed")
			assert.Contains(t, out.Pinned, w.Log.VKey)
			assert.True(t, strings.HasPrefix(out.Bound, "no trusted clock: no time bound"), out.Bound)
		})
	}

	t.Run("a fork's node disagrees with the chain's", func(t *testing.T) {
		out := f.run(t, browser, served, func(r *browsertest.Run) {
			r.Endpoints = map[string]string{"etherlink": w.EVMURL + " " + w.ForkURL}
		})
		assert.Equal(t, "endpoints", out.Check)
		result, check := out.Chain(t, "etherlink")
		assert.Equal(t, "fail", result)
		assert.Equal(t, "endpoints", check)
	})

	for _, c := range forged.Cases {
		if c.Check != verify.CheckTransaction {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			out := f.run(t, browser, served, func(r *browsertest.Run) {
				r.Receipt = f.write(t, "forged.json", c.Receipt)
				r.Trust = f.write(t, "trust.json", c.Trust)
				r.Endpoints = map[string]string{}
				for chain, urls := range c.Endpoints {
					r.Endpoints[chain] = strings.Join(urls, " ")
				}
			})
			assert.Equal(t, c.Check, out.Check, out.Text)
			result, check := out.Chain(t, c.Chain)
			assert.Equal(t, "fail", result)
			assert.Equal(t, c.Check, check)
		})
	}
}
