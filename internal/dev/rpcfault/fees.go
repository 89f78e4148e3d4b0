package rpcfault

import (
	"bytes"
	"encoding/json"
	"math/big"
	"net/http"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

// FeeMarket makes the proxy price and drop transactions as EtherLink's
// sequencer does, in front of a node that does not (the local EVM chain):
//
//   - the base fee the node reports (baseFeePerGas of the blocks it returns,
//     eth_gasPrice) is raised to at least MinBaseFee: EtherLink's floor is
//     1 gwei, and a test raises it to model a base fee rising under a
//     gas backlog;
//   - eth_estimateGas adds the inclusion fee, InclusionFeePerByte × (150 +
//     calldata bytes + access-list bytes), in gas at the current base fee;
//   - eth_sendRawTransaction of a transaction whose max fee per gas is below
//     the current base fee, or whose gas limit at that price does not pay
//     for its execution plus the inclusion fee, is answered with its hash as
//     if accepted and never reaches the node: it is never mined and the node
//     does not know it (Stats.Dropped counts them).
type FeeMarket struct {
	MinBaseFee          *big.Int // wei; nil: the node's base fee as it is
	InclusionFeePerByte *big.Int // wei; EtherLink: 0.000004 XTZ = 4e12
	// StaleBaseFee, when set, is the base fee blocks and eth_gasPrice
	// report while transactions are judged at the current one: a base fee
	// that rose under a backlog faster than the node says, so senders
	// price too low and are dropped.
	StaleBaseFee *big.Int
}

// reported is the base fee the proxy shows for the node's x.
func (m FeeMarket) reported(x *big.Int) *big.Int {
	if m.StaleBaseFee != nil {
		return new(big.Int).Set(m.StaleBaseFee)
	}
	return raised(x, m)
}

// EtherLinkFees is FeeMarket with EtherLink's documented numbers.
func EtherLinkFees() FeeMarket {
	return FeeMarket{MinBaseFee: big.NewInt(1e9), InclusionFeePerByte: big.NewInt(4e12)}
}

// SetFeeMarket turns the fee market on (nil: off, every call forwarded as is).
func (p *Proxy) SetFeeMarket(m *FeeMarket) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m == nil {
		p.fees = nil
		return
	}
	c := *m
	p.fees = &c
}

type rpcCall struct {
	JSONRPC string            `json:"jsonrpc"`
	ID      json.RawMessage   `json:"id,omitempty"`
	Method  string            `json:"method"`
	Params  []json.RawMessage `json:"params"`
}

type rpcAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   json.RawMessage `json:"error,omitempty"`
}

// parseCalls reads a JSON-RPC request, single or batch.
func parseCalls(body []byte) (calls []rpcCall, batch, ok bool) {
	body = bytes.TrimSpace(body)
	batch = len(body) > 0 && body[0] == '['
	if batch {
		return calls, true, json.Unmarshal(body, &calls) == nil
	}
	var c rpcCall
	if json.Unmarshal(body, &c) != nil {
		return nil, false, false
	}
	return []rpcCall{c}, false, true
}

// writeAnswers answers a request, as a batch when it was one.
func writeAnswers(w http.ResponseWriter, answers []rpcAnswer, batch bool) {
	w.Header().Set("Content-Type", "application/json")
	if batch {
		_ = json.NewEncoder(w).Encode(answers)
		return
	}
	_ = json.NewEncoder(w).Encode(answers[0])
}

// serveFees answers one request under the fee market m.
func (p *Proxy) serveFees(w http.ResponseWriter, r *http.Request, body []byte, m FeeMarket) {
	r = r.Clone(r.Context())
	r.Header.Del("Accept-Encoding") // answers are read and rewritten here: plain JSON
	calls, batch, ok := parseCalls(body)
	if !ok {
		p.passThrough(w, r, body)
		return
	}
	base := p.baseFee(r, m)
	var forward []rpcCall
	var answers []rpcAnswer
	for _, c := range calls {
		if c.Method == "eth_sendRawTransaction" && base != nil {
			if hash, drop := underpriced(c, base, m); drop {
				p.dropped.Add(1)
				res, _ := json.Marshal(hash)
				answers = append(answers, rpcAnswer{JSONRPC: "2.0", ID: c.ID, Result: res})
				continue
			}
		}
		forward = append(forward, c)
	}
	if len(forward) > 0 {
		var out []byte
		if batch {
			out, _ = json.Marshal(forward)
		} else {
			out, _ = json.Marshal(forward[0])
		}
		status, _, answer, err := p.forward(r, out)
		if err != nil {
			http.Error(w, "upstream node unreachable", http.StatusBadGateway)
			return
		}
		var got []rpcAnswer
		if batch {
			err = json.Unmarshal(answer, &got)
		} else {
			got = make([]rpcAnswer, 1)
			err = json.Unmarshal(answer, &got[0])
		}
		if err != nil || status != http.StatusOK {
			w.WriteHeader(status)
			_, _ = w.Write(answer)
			return
		}
		methods := map[string]rpcCall{}
		for _, c := range forward {
			methods[string(c.ID)] = c
		}
		for i := range got {
			if c, ok := methods[string(got[i].ID)]; ok && len(got[i].Result) > 0 {
				got[i].Result = patch(c, got[i].Result, base, m)
			}
		}
		answers = append(answers, got...)
	}
	p.forwarded.Add(1)
	writeAnswers(w, answers, batch)
}

func (p *Proxy) passThrough(w http.ResponseWriter, r *http.Request, body []byte) {
	status, _, answer, err := p.forward(r, body)
	if err != nil {
		http.Error(w, "upstream node unreachable", http.StatusBadGateway)
		return
	}
	p.forwarded.Add(1)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// baseFee is the current base fee under m: the node's latest block's, at
// least MinBaseFee; nil when the node could not say.
func (p *Proxy) baseFee(r *http.Request, m FeeMarket) *big.Int {
	res, rpcErr, err := p.call(r, "eth_getBlockByNumber", json.RawMessage(`"latest"`), json.RawMessage("false"))
	if err != nil || len(rpcErr) > 0 {
		return nil
	}
	var b *struct {
		BaseFee *hexutil.Big `json:"baseFeePerGas"`
	}
	if json.Unmarshal(res, &b) != nil || b == nil || b.BaseFee == nil {
		return nil
	}
	return raised((*big.Int)(b.BaseFee), m)
}

func raised(x *big.Int, m FeeMarket) *big.Int {
	if m.MinBaseFee != nil && x.Cmp(m.MinBaseFee) < 0 {
		return new(big.Int).Set(m.MinBaseFee)
	}
	return new(big.Int).Set(x)
}

// patch rewrites one forwarded answer to the fee market's numbers.
func patch(c rpcCall, result json.RawMessage, base *big.Int, m FeeMarket) json.RawMessage {
	switch c.Method {
	case "eth_gasPrice":
		var v hexutil.Big
		if json.Unmarshal(result, &v) != nil {
			return result
		}
		out, _ := json.Marshal((*hexutil.Big)(m.reported((*big.Int)(&v))))
		return out
	case "eth_getBlockByNumber", "eth_getBlockByHash":
		var blk map[string]json.RawMessage
		if json.Unmarshal(result, &blk) != nil || blk == nil || blk["baseFeePerGas"] == nil {
			return result
		}
		var v hexutil.Big
		if json.Unmarshal(blk["baseFeePerGas"], &v) != nil {
			return result
		}
		blk["baseFeePerGas"], _ = json.Marshal((*hexutil.Big)(m.reported((*big.Int)(&v))))
		out, _ := json.Marshal(blk)
		return out
	case "eth_estimateGas":
		var gas hexutil.Uint64
		if base == nil || len(c.Params) == 0 || json.Unmarshal(result, &gas) != nil {
			return result
		}
		var args struct {
			Data       hexutil.Bytes    `json:"data"`
			Input      hexutil.Bytes    `json:"input"`
			AccessList types.AccessList `json:"accessList"`
		}
		_ = json.Unmarshal(c.Params[0], &args)
		data := args.Input
		if len(data) == 0 {
			data = args.Data
		}
		out, _ := json.Marshal(hexutil.Uint64(uint64(gas) + inclusionGas(len(data), accessListBytes(args.AccessList), base, m)))
		return out
	}
	return result
}

// underpriced decodes a raw transaction and says whether EtherLink would
// drop it at base fee base, with its hash (the answer a node gives).
func underpriced(c rpcCall, base *big.Int, m FeeMarket) (string, bool) {
	if len(c.Params) == 0 {
		return "", false
	}
	var raw hexutil.Bytes
	if json.Unmarshal(c.Params[0], &raw) != nil {
		return "", false
	}
	tx := new(types.Transaction)
	if tx.UnmarshalBinary(raw) != nil {
		return "", false
	}
	need := executionGas(tx.Data(), tx.AccessList()) + inclusionGas(len(tx.Data()), accessListBytes(tx.AccessList()), base, m)
	return tx.Hash().Hex(), tx.GasFeeCap().Cmp(base) < 0 || tx.Gas() < need
}

// inclusionGas is the inclusion fee in gas at base fee base, rounded up.
func inclusionGas(dataBytes, accessBytes int, base *big.Int, m FeeMarket) uint64 {
	if m.InclusionFeePerByte == nil || base.Sign() <= 0 {
		return 0
	}
	fee := new(big.Int).Mul(m.InclusionFeePerByte, big.NewInt(int64(150+dataBytes+accessBytes)))
	fee.Add(fee, new(big.Int).Sub(base, big.NewInt(1)))
	return fee.Div(fee, base).Uint64()
}

// executionGas is a plain call's intrinsic gas (EIP-2028 calldata, EIP-2930
// access list), at least EIP-7623's calldata floor: what a transfer with
// data to an account without code burns.
func executionGas(data []byte, al types.AccessList) uint64 {
	var zero, nonzero uint64
	for _, b := range data {
		if b == 0 {
			zero++
		} else {
			nonzero++
		}
	}
	gas := 21000 + 4*zero + 16*nonzero
	for _, t := range al {
		gas += 2400 + 1900*uint64(len(t.StorageKeys))
	}
	return max(gas, 21000+10*(zero+4*nonzero))
}

// accessListBytes is an access list's size: 20 bytes per address, 32 per key.
func accessListBytes(al types.AccessList) int {
	n := 0
	for _, t := range al {
		n += 20 + 32*len(t.StorageKeys)
	}
	return n
}
