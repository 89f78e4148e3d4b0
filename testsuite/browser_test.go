package testsuite

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/config"
	"github.com/keeperhq/keeper/internal/dev/browsertest"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
)

// TestBrowserVerifiesReceiptsOnBothLocalChains anchors a real file on the
// local EtherLink-like chain and the local Solana devnet, then has headless
// Chromium run the /verify page on its receipt: served by keeper, and saved
// as a file. A genuine receipt verifies on both chains; a changed file, a
// flipped bit in the proof and a receipt naming another network each fail
// with the check that catches them.
func TestBrowserVerifiesReceiptsOnBothLocalChains(t *testing.T) {
	endToEnd(t)
	browser := browsertest.Start(t) // first: without Chromium there is nothing to start the stack for

	node, cfg, st, _ := startOnLocalChains(t, func(cfg *config.Config) {
		cfg.AnchorInterval = time.Second // the evidence posted together share a batch
	})
	api := "http://" + node.APIAddr()

	// The file, and a copy with one byte changed.
	files := t.TempDir()
	content := make([]byte, 256<<10)
	_, _ = rand.Read(content)
	original := filepath.Join(files, "contract.bin")
	require.NoError(t, os.WriteFile(original, content, 0o600))
	content[len(content)/2] ^= 0x01
	changed := filepath.Join(files, "contract-changed.bin")
	require.NoError(t, os.WriteFile(changed, content, 0o600))
	sum := sha256File(t, original)

	// The first evidence after a quiet interval goes alone; the next five
	// share a batch, so the file's proof has a path with hashes to flip.
	hc := &http.Client{Timeout: 10 * time.Second}
	both := []string{"etherlink", "solana"}
	var id string
	for i, d := range []string{digest(t.Name(), 0), sum, digest(t.Name(), 1), digest(t.Name(), 2), digest(t.Name(), 3), digest(t.Name(), 4)} {
		code, got, err := post(hc, node.APIAddr(), map[string]any{"digest": d, "chains": both})
		require.NoError(t, err)
		require.Equal(t, http.StatusAccepted, code)
		if i == 1 {
			id = got
		}
	}
	waitConfirmed(t, st, 6, 40*time.Second)
	genuine := receiptJSON(t, api, id)
	require.Equal(t, json.Number("3"), genuine["version"], "keeper issues version 3: the evidence's place in the log, anchored on each chain")
	require.NotEmpty(t, genuine["log"].(map[string]any)["inclusion"], "the file shares its log: its inclusion proof has hashes")
	t.Logf("receipt %s: version %v, digest %s, anchors on %d chains", id, genuine["version"], sum, len(anchorsOf(genuine)))

	pageURL := api + "/verify"
	// What a verifier pins: the log's key, and keeper's anchoring accounts
	// (the ones that just anchored the genuine receipt).
	logKey := httpGetText(t, api+"/log/key")
	accounts := "etherlink=" + anchorOf(genuine, "etherlink")["account"].(string) + " solana=" + anchorOf(genuine, "solana")["account"].(string)
	run := func(t *testing.T, name, page, file string, r map[string]any, endpoints map[string]string) browsertest.Outcome {
		t.Helper()
		if endpoints == nil {
			// No public endpoint serves the local EVM chain's network
			// (receipt.LocalEVMNetwork): give the local one, as a user of
			// the saved page would.
			endpoints = map[string]string{"etherlink": cfg.EVM.RPCURL}
		}
		// The local chains are test networks: their clocks bound the time
		// only when the verifier trusts them, as a user of keeper dev does.
		clocks := receipt.LocalEVMNetwork + " " + anchorOf(genuine, "solana")["network"].(string)
		out := browsertest.Verify(t, browser, browsertest.Run{Page: page, File: file, Receipt: writeReceipt(t, files, name, r),
			LogKey: logKey, Accounts: accounts, Clocks: clocks, Endpoints: endpoints})
		t.Logf("%-22s result=%-4s check=%-8s %s", name, out.Result, out.Check, out.Text)
		t.Logf("%-22s   digest: %v", "", out.Digest["text"])
		for _, c := range out.Chains {
			t.Logf("%-22s   %-9s %-4s check=%-11s %s", "", c.Chain, c.Result, c.Check, c.Text)
		}
		return out
	}
	t.Run("genuine", func(t *testing.T) {
		out := run(t, "genuine", pageURL, original, genuine, nil)
		assert.Equal(t, "ok", out.Result, out.Text)
		assert.Equal(t, "ok", out.Digest["result"])
		assert.Contains(t, out.Bound, "existed no later than", "the page shows the time the chains prove")
		assert.Contains(t, out.Pinned, logKey, "the page prints the key it checked against")
		for _, chain := range both {
			result, check := out.Chain(t, chain)
			assert.Equal(t, "ok", result, "%s failed at %s", chain, check)
		}
	})

	t.Run("changed file", func(t *testing.T) {
		out := run(t, "changed file", pageURL, changed, genuine, nil)
		assert.Equal(t, "fail", out.Result)
		assert.Equal(t, "digest", out.Check)
		assert.Equal(t, "fail", out.Digest["result"])
		assert.Empty(t, out.Chains, "a receipt for another file is not checked further")
	})

	t.Run("flipped bit in the inclusion proof", func(t *testing.T) {
		r := clone(t, genuine)
		path := r["log"].(map[string]any)["inclusion"].([]any)
		h, err := hex.DecodeString(path[0].(string))
		require.NoError(t, err)
		h[31] ^= 0x01
		path[0] = hex.EncodeToString(h)
		out := run(t, "flipped bit in proof", pageURL, original, r, nil)
		assert.Equal(t, "fail", out.Result)
		assert.Equal(t, "inclusion", out.Check)
		for _, chain := range both {
			result, check := out.Chain(t, chain)
			assert.Equal(t, "fail", result, "the entry is in neither chain's anchored log")
			assert.Equal(t, "inclusion", check)
		}
	})

	t.Run("another network", func(t *testing.T) {
		r := clone(t, genuine)
		anchorOf(r, "etherlink")["network"] = "eip155:1"
		// No endpoint is known for eip155:1: the user gives the one they
		// trust, here the local chain, which serves receipt.LocalEVMNetwork.
		out := run(t, "another network", pageURL, original, r, map[string]string{"etherlink": cfg.EVM.RPCURL})
		assert.Equal(t, "fail", out.Result)
		assert.Equal(t, "network", out.Check)
		result, check := out.Chain(t, "etherlink")
		assert.Equal(t, "fail", result)
		assert.Equal(t, "network", check)
		assert.Contains(t, out.Chains[indexOf(out, "etherlink")].Text, receipt.LocalEVMNetwork)
		result, _ = out.Chain(t, "solana")
		assert.Equal(t, "ok", result)
	})

	t.Run("hand-built receipts", func(t *testing.T) {
		// A leaf at the odd end of a three-leaf tree, pointing at the genuine
		// etherlink transaction: the page hashes it as its version says
		// (salt ‖ digest in 2, the bare digest in 1), so the proof holds, the
		// network is checked when the anchor names one, and the chain's root
		// differs.
		salt := bytes.Repeat([]byte{0x5a}, 16)
		d, err := hex.DecodeString(sum)
		require.NoError(t, err)
		tree, err := merkle.Build([][]byte{[]byte("a"), []byte("b"), append(salt, d...)})
		require.NoError(t, err)
		path, err := tree.Path(2)
		require.NoError(t, err)
		root := tree.Root()
		onChain := anchorOf(genuine, "etherlink")
		r := map[string]any{
			"version": 2, "evidence_id": id, "digest": sum, "salt": hex.EncodeToString(salt), "tree": "rfc6962-sha256",
			"anchors": []any{map[string]any{
				"chain": "etherlink", "network": receipt.LocalEVMNetwork, "leaf_index": 2, "tree_size": 3,
				"path": hexPath(path), "root": hex.EncodeToString(root[:]), "tx_ref": onChain["tx_ref"],
				"block": onChain["block"], "block_hash": "0x" + strings.Repeat("00", 32), "block_time": onChain["block_time"], "finality": "finalized",
			}},
		}
		out := run(t, "hand-built v2", pageURL, original, r, nil)
		result, check := out.Chain(t, "etherlink")
		assert.Equal(t, "fail", result)
		assert.Equal(t, "payload", check, "the salted proof holds; the chain carries another root")

		r["salt"] = strings.Repeat("00", 16)
		out = run(t, "v2 with another salt", pageURL, original, r, nil)
		_, check = out.Chain(t, "etherlink")
		assert.Equal(t, "proof", check, "the salt is part of the leaf")

		tree, err = merkle.Build([][]byte{[]byte("a"), []byte("b"), d})
		require.NoError(t, err)
		path, err = tree.Path(2)
		require.NoError(t, err)
		root = tree.Root()
		v1 := map[string]any{
			"version": 1, "evidence_id": id, "digest": sum, "tree": "rfc6962-sha256",
			"anchors": []any{map[string]any{
				"chain": "etherlink", "leaf_index": 2, "tree_size": 3, "path": hexPath(path), "root": hex.EncodeToString(root[:]),
				"tx_ref": onChain["tx_ref"], "block": onChain["block"], "block_time": onChain["block_time"],
			}},
		}
		out = run(t, "hand-built v1", pageURL, original, v1, nil)
		_, check = out.Chain(t, "etherlink")
		assert.Equal(t, "payload", check, "the unsalted proof holds; the chain carries another root")
	})

	t.Run("saved as a file", func(t *testing.T) {
		resp, err := http.Get(pageURL)
		require.NoError(t, err)
		html, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		saved := filepath.Join(files, "keeper-verify.html")
		require.NoError(t, os.WriteFile(saved, html, 0o600))
		out := run(t, "saved as a file", "file://"+saved, original, genuine, nil)
		assert.Equal(t, "ok", out.Result, out.Text)
		for _, chain := range both {
			result, check := out.Chain(t, chain)
			assert.Equal(t, "ok", result, "%s from file:// failed at %s (the chain must answer CORS preflights)", chain, check)
		}
	})
}

// httpGetText is the body of a GET that must answer 200, trimmed.
func httpGetText(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode, url)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

func sha256File(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// receiptJSON fetches a receipt as generic JSON, numbers kept as written, so
// a test can change one field and leave the rest byte for byte.
func receiptJSON(t *testing.T, api, id string) map[string]any {
	t.Helper()
	resp, err := http.Get(api + "/v1/evidence/" + id + "/receipt")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return decodeJSON(t, raw)
}

func decodeJSON(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var out map[string]any
	require.NoError(t, dec.Decode(&out))
	return out
}

func clone(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	raw, err := json.Marshal(r)
	require.NoError(t, err)
	return decodeJSON(t, raw)
}

func anchorsOf(r map[string]any) []map[string]any {
	var out []map[string]any
	for _, a := range r["anchors"].([]any) {
		out = append(out, a.(map[string]any))
	}
	return out
}

func anchorOf(r map[string]any, chain string) map[string]any {
	for _, a := range anchorsOf(r) {
		if a["chain"] == chain {
			return a
		}
	}
	return nil
}

func indexOf(o browsertest.Outcome, chain string) int {
	for i, c := range o.Chains {
		if c.Chain == chain {
			return i
		}
	}
	return -1
}

func hexPath(path []merkle.Hash) []any {
	out := make([]any, len(path))
	for i, h := range path {
		out[i] = hex.EncodeToString(h[:])
	}
	return out
}

func writeReceipt(t *testing.T, dir, name string, r map[string]any) string {
	t.Helper()
	raw, err := json.MarshalIndent(r, "", "  ")
	require.NoError(t, err)
	p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".receipt.json")
	require.NoError(t, os.WriteFile(p, raw, 0o600))
	return p
}
