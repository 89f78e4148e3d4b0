package audit_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/evlog/audit"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/dev/conformance"
)

// TestTheAuditJudgesTheWholeCorpus runs the audit's judgement of each
// transaction (JudgeTransaction) over keeper's conformance corpus
// (conformance/README.md, Audit findings): every transaction a vector's
// first endpoint per chain answers is read through package chainread from
// the vector's recorded answers, served over JSON-RPC, and judged against
// the vector's pinned root and signed checkpoints, and the largest
// checkpoint the log serves is held to the root's quorum
// (JudgeCheckpoint); the kinds found must be exactly the one the vector
// expects, or none.
func TestTheAuditJudgesTheWholeCorpus(t *testing.T) {
	conformance.Each(t, func(t *testing.T, v conformance.Vector) {
		found, judged := judgeVector(t, v)
		if !judged {
			return
		}
		var want []string
		if v.Expect.Audit.Finding != "" {
			want = append(want, v.Expect.Audit.Finding)
		}
		assert.Equal(t, want, found, "%s", v.Description)
	})
}

// judgeVector reads and judges v's transactions and returns the kinds
// found, sorted, each once; judged is false when v's root does not parse,
// so that the audit has nothing pinned to judge against.
func judgeVector(t *testing.T, v conformance.Vector) (kinds []string, judged bool) {
	t.Helper()
	root, err := trust.Open([]byte(v.Trust), nil)
	if err != nil {
		assert.Empty(t, v.Expect.Audit.Finding, "a vector whose trust root does not parse pins nothing to audit")
		t.Logf("not judged: the pinned trust root does not parse (%v)", err)
		return nil, false
	}
	key, err := root.Key()
	require.NoError(t, err)
	signed := map[uint64][32]byte{}
	var latest string // the largest checkpoint the log serves: the one receipts name
	for _, note := range v.Log {
		if c, err := key.Open([]byte(note)); err == nil {
			if len(signed) == 0 || c.Size > slices.Max(slices.Collect(maps.Keys(signed))) {
				latest = note
			}
			signed[c.Size] = c.Root
		}
	}
	found := map[string]bool{}
	for _, f := range audit.JudgeCheckpoint(root, []byte(latest)) {
		t.Logf("%s", f)
		found[f.Kind] = true
	}
	urls := conformance.Serve(t, v)
	for _, chain := range slices.Sorted(maps.Keys(v.Endpoints)) {
		names := v.Endpoints[chain]
		if len(names) == 0 {
			continue
		}
		c := chainread.HTTP(urls[chain][0], nil)
		seen := map[string]bool{}
		for _, call := range v.Answers[names[0]] {
			ref, tx, err := readRecorded(t, c, call)
			if ref == "" || seen[ref] {
				continue
			}
			seen[ref] = true
			if err != nil {
				t.Logf("%s tx %s: not judged, chainread refuses it: %v", chain, ref, err)
				continue
			}
			for _, f := range audit.JudgeTransaction(root, key, chain, ref, tx, signed) {
				t.Logf("%s", f)
				found[f.Kind] = true
			}
		}
	}
	if len(found) == 0 {
		return nil, true
	}
	return slices.Sorted(maps.Keys(found)), true
}

// readRecorded reads, through c, the transaction a recorded call asks for
// (eth_getTransactionByHash, getTransaction); ref is "" for another call.
func readRecorded(t *testing.T, c chainread.Caller, call conformance.Call) (string, chainread.Tx, error) {
	t.Helper()
	if len(call.Params) == 0 {
		return "", chainread.Tx{}, nil
	}
	var ref string
	if json.Unmarshal(call.Params[0], &ref) != nil {
		return "", chainread.Tx{}, nil
	}
	switch call.Method {
	case "eth_getTransactionByHash":
		h, err := chainread.EVMHash(ref)
		if err != nil {
			return ref, chainread.Tx{}, err
		}
		tx, err := chainread.EVM(t.Context(), c, h)
		return ref, tx, err
	case "getTransaction":
		sig, err := chainread.SolanaSignature(ref)
		if err != nil {
			return ref, chainread.Tx{}, err
		}
		tx, err := chainread.Solana(t.Context(), c, sig)
		return ref, tx, err
	}
	return "", chainread.Tx{}, nil
}
