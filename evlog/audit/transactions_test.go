package audit_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/evlog/audit"
	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/dev/receipttest"
	"github.com/keeperhq/keeper/receipt"
)

// TestAListedAccountsBatchAnchorSentAfterTheLogBeganIsAFinding: a batch
// root (receipt version 1) commits to no tree size, so it counts only from
// before the log began; one the anchoring account sent since is a receipt
// keeper could hand out outside the log.
func TestAListedAccountsBatchAnchorSentAfterTheLogBeganIsAFinding(t *testing.T) {
	f := anchoredLog(t)
	tx, st := f.submit(t, "etherlink", chains.Anchor{BatchID: f.batch.Add(1), Root: [32]byte{1, 2, 3}})
	require.False(t, st.BlockTime.IsZero())

	root := f.trustRoot(t)
	root.Log.ValidFor.Start = st.BlockTime.Add(-time.Second)
	r := f.audit(t, f.serve(t), withTrust(root))
	ks, all := kinds(r)
	assert.Equal(t, []string{audit.KindBatch}, ks, all)
	assert.Contains(t, all, tx)
	assert.Contains(t, all, "on or after the log began")
	assert.Equal(t, 3, r.Transactions["etherlink"], "two checkpoint anchors and the batch anchor")

	t.Run("and one sent before the log began is none", func(t *testing.T) {
		root.Log.ValidFor.Start = st.BlockTime.Add(time.Second)
		r := f.audit(t, f.serve(t), withTrust(root))
		_, all := kinds(r)
		assert.True(t, r.OK(), all)
	})
}

// TestAListedAccountsMemoWithALeadingByteOrderMarkIsAFinding: a memo that
// holds keeper's payload behind a byte-order mark is no anchor to any
// verifier (exact bytes), and still the anchoring account sent it.
func TestAListedAccountsMemoWithALeadingByteOrderMarkIsAFinding(t *testing.T) {
	f := anchoredLog(t)
	cp, err := f.st.LatestCheckpoint(t.Context())
	require.NoError(t, err)
	memo := "\ufeff" + receipt.SolanaCheckpointMemo(receipt.CheckpointRef{KeyHash: f.signer.Key().Hash, Size: cp.Size, Root: cp.Root})
	tx := f.sendMemo(t, memo)

	r := f.audit(t, f.serve(t), withTrust(f.trustRoot(t)))
	ks, all := kinds(r)
	assert.Equal(t, []string{audit.KindPayload}, ks, all)
	assert.Contains(t, all, "payload: solana: tx "+tx)
	assert.Equal(t, map[string]int{"etherlink": 2, "solana": 2}, r.Anchors, "the memo is no anchor")
}

// TestEndpointsOfOneNetworkThatDisagreeAreAFinding: every endpoint given
// for a network is asked about every transaction of the account, and one
// that hides a transaction the others hold is a finding.
func TestEndpointsOfOneNetworkThatDisagreeAreAFinding(t *testing.T) {
	f := newFixture(t)
	f.grow(t, 5)
	evmTx := strings.ToLower(f.anchor(t, "etherlink"))
	solTx := f.anchor(t, "solana")
	honest := func(_ bool, b []byte) []byte { return b }

	t.Run("endpoints that agree", func(t *testing.T) {
		r := f.audit(t, f.serve(t), withTrust(f.trustRoot(t)), func(o *audit.Options) {
			o.Chains[0].RPCs = []string{receipttest.RewritingProxy(t, evmChain.URL(), honest)}
			o.Chains[1].RPCs = []string{receipttest.RewritingProxy(t, solChain.URL(), honest)}
		})
		_, all := kinds(r)
		assert.True(t, r.OK(), all)
	})
	t.Run("an EVM endpoint that hides an anchor", func(t *testing.T) {
		hides := func(request bool, b []byte) []byte {
			if request && bytes.Contains(b, []byte(`"eth_getTransactionByHash"`)) {
				return bytes.ReplaceAll(b, []byte(evmTx), []byte("0x"+strings.Repeat("0", 63)+"1"))
			}
			return b
		}
		r := f.audit(t, f.serve(t), withTrust(f.trustRoot(t)), func(o *audit.Options) {
			o.Chains[0].RPCs = []string{receipttest.RewritingProxy(t, evmChain.URL(), hides)}
		})
		ks, all := kinds(r)
		assert.Equal(t, []string{audit.KindEndpoints}, ks, all)
		assert.Contains(t, all, "disagree on tx "+evmTx)
		assert.Contains(t, all, "endpoint 2")
	})
	t.Run("a Solana endpoint whose history lacks an anchor", func(t *testing.T) {
		r := f.audit(t, f.serve(t), withTrust(f.trustRoot(t)), func(o *audit.Options) {
			o.Chains[1].RPCs = []string{receipttest.RewritingProxy(t, solChain.URL(), rewriteHistory(func(h []map[string]any) []map[string]any {
				var out []map[string]any
				for _, e := range h {
					if e["signature"] != solTx {
						out = append(out, e)
					}
				}
				return out
			}))}
		})
		ks, all := kinds(r)
		assert.Equal(t, []string{audit.KindEndpoints}, ks, all)
		assert.Contains(t, all, "lacks 1 transaction(s) another endpoint lists: "+solTx)
	})
}

// TestASolanaHistoryThatCannotBeReadWholeIsAFinding: an endpoint that
// answers the first page of the account's history, full, and fails the
// next: the audit reads no part of a history as the whole of it.
func TestASolanaHistoryThatCannotBeReadWholeIsAFinding(t *testing.T) {
	f := anchoredLog(t)
	full := rewriteHistory(func(h []map[string]any) []map[string]any {
		for len(h) < 1000 {
			var sig [64]byte
			_, _ = rand.Read(sig[:])
			h = append(h, map[string]any{"signature": chainread.Base58Encode(sig[:]), "slot": 0, "err": nil, "blockTime": nil})
		}
		return h
	})
	failsPageTwo := func(request bool, b []byte) []byte {
		if request && bytes.Contains(b, []byte(`"getSignaturesForAddress"`)) && bytes.Contains(b, []byte(`"before"`)) {
			return bytes.Replace(b, []byte(`"getSignaturesForAddress"`), []byte(`"getSignaturesForAddressPageTwo"`), 1)
		}
		return full(request, b)
	}
	r := f.audit(t, f.serve(t), withTrust(f.trustRoot(t)), func(o *audit.Options) {
		o.Chains[1].RPC = receipttest.RewritingProxy(t, solChain.URL(), failsPageTwo)
	})
	ks, all := kinds(r)
	assert.Equal(t, []string{audit.KindUnread}, ks, all)
	assert.Contains(t, all, "its history cannot be read whole")
	assert.Contains(t, all, "getSignaturesForAddress "+f.payer.PublicKey().String()+" before ")
	assert.Zero(t, r.Anchors["solana"])
}

// rewriteHistory rewrites the answers to getSignaturesForAddress (a list
// of objects with a signature) with change.
func rewriteHistory(change func([]map[string]any) []map[string]any) func(bool, []byte) []byte {
	return func(request bool, b []byte) []byte {
		var resp struct {
			JSONRPC string           `json:"jsonrpc"`
			ID      json.RawMessage  `json:"id"`
			Result  []map[string]any `json:"result"`
		}
		if request || json.Unmarshal(b, &resp) != nil || len(resp.Result) == 0 || resp.Result[0]["signature"] == nil {
			return b
		}
		resp.Result = change(resp.Result)
		if resp.Result == nil {
			resp.Result = []map[string]any{}
		}
		out, err := json.Marshal(resp)
		if err != nil {
			return b
		}
		return out
	}
}
