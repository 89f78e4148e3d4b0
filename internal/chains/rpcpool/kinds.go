package rpcpool

import (
	"bytes"
	"encoding/json"
)

// EVM is an Ethereum JSON-RPC endpoint (EtherLink, anvil, geth).
var EVM = Kind{
	Name:       "etherlink",
	HeadMethod: "eth_blockNumber",
	Broadcast:  []string{"eth_sendRawTransaction"},
	Agree: map[string]func([]json.RawMessage) (json.RawMessage, bool){
		"eth_getTransactionReceipt": agreeReceipts,
	},
	DefaultMaxLag: 10,
}

// Solana is a Solana JSON-RPC endpoint.
var Solana = Kind{
	Name:       "solana",
	HeadMethod: "getSlot",
	Broadcast:  []string{"sendTransaction"},
	Agree: map[string]func([]json.RawMessage) (json.RawMessage, bool){
		"getSignatureStatuses": agreeStatuses,
	},
	// Solana's own getHealth calls a node behind by more than 150 slots
	// (about a minute) unhealthy.
	DefaultMaxLag: 150,
}

func isNull(r json.RawMessage) bool {
	r = bytes.TrimSpace(r)
	return len(r) == 0 || string(r) == "null"
}

// agreeReceipts keeps a receipt every endpoint reports alike (same
// transaction, block, block hash and status). A receipt only some report
// is not agreed: it is "not mined yet" until the others see it too.
func agreeReceipts(results []json.RawMessage) (json.RawMessage, bool) {
	type key struct {
		TxHash      string `json:"transactionHash"`
		BlockHash   string `json:"blockHash"`
		BlockNumber string `json:"blockNumber"`
		Status      string `json:"status"`
	}
	var first key
	nulls := 0
	for i, r := range results {
		if isNull(r) {
			nulls++
			continue
		}
		var k key
		if json.Unmarshal(r, &k) != nil {
			return nil, false
		}
		if i > nulls && k != first {
			return nil, false
		}
		if i == nulls {
			first = k
		}
	}
	switch nulls {
	case len(results):
		return json.RawMessage("null"), true
	case 0:
		return results[0], true
	default:
		return nil, false
	}
}

// agreeStatuses merges getSignatureStatuses answers signature by
// signature: a status every endpoint reports at the same slot without
// conflicting errors is kept at the lowest confirmation any reports; any
// other is null (not seen yet). agreed is false when any signature was
// held back because the endpoints differed.
func agreeStatuses(results []json.RawMessage) (json.RawMessage, bool) {
	type answer struct {
		Context json.RawMessage   `json:"context"`
		Value   []json.RawMessage `json:"value"`
	}
	type status struct {
		Slot               uint64          `json:"slot"`
		Err                json.RawMessage `json:"err"`
		ConfirmationStatus string          `json:"confirmationStatus"`
	}
	level := map[string]int{"processed": 1, "confirmed": 2, "finalized": 3}
	answers := make([]answer, len(results))
	for i, r := range results {
		if json.Unmarshal(r, &answers[i]) != nil || (i > 0 && len(answers[i].Value) != len(answers[0].Value)) {
			return nil, false
		}
	}
	out := answers[0]
	out.Value = make([]json.RawMessage, len(answers[0].Value))
	agreed := true
	for s := range out.Value {
		var keep json.RawMessage
		var low status
		seen := 0
		for i, a := range answers {
			if isNull(a.Value[s]) {
				continue
			}
			var st status
			if json.Unmarshal(a.Value[s], &st) != nil {
				return nil, false
			}
			if seen > 0 && (st.Slot != low.Slot || !bytes.Equal(normal(st.Err), normal(low.Err))) {
				seen = -1
				break
			}
			if seen == 0 || level[st.ConfirmationStatus] < level[low.ConfirmationStatus] {
				keep, low = answers[i].Value[s], st
			}
			seen++
		}
		switch {
		case seen == len(answers):
			out.Value[s] = keep
		case seen == 0:
			out.Value[s] = json.RawMessage("null")
		default:
			out.Value[s] = json.RawMessage("null")
			agreed = false
		}
	}
	merged, err := json.Marshal(out)
	if err != nil {
		return nil, false
	}
	return merged, agreed
}

func normal(r json.RawMessage) []byte {
	if isNull(r) {
		return []byte("null")
	}
	var v any
	if json.Unmarshal(r, &v) != nil {
		return r
	}
	b, _ := json.Marshal(v)
	return b
}
