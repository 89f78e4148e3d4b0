package rpcfault

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
)

// Lies make the proxy an EVM provider that is wrong in the ways providers
// are, for tests of keeper's several-provider pools (chains/rpcpool).
type Lies struct {
	// LagBlocks > 0 serves the chain as it was that many blocks ago: the
	// head, tagged blocks, receipts, transactions and nonces of later
	// blocks are not there yet.
	LagBlocks uint64
	// InventReceipts swallows every transaction sent through the proxy (the
	// node never gets it; its hash is answered) and answers a receipt the
	// node does not have with an invented one: status 1 in the block that
	// was finalized when it was first asked for (so a client that believes
	// it takes the transaction as final at once), the same on every ask
	// until the node has a receipt of its own.
	InventReceipts bool
}

// SetLies makes the proxy lie (a zero Lies: honest again).
func (p *Proxy) SetLies(l Lies) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lies = l
	if p.invented == nil {
		p.invented = map[string]json.RawMessage{}
	}
}

// Lied counts the calls the proxy answered with a lie.
func (p *Proxy) Lied() int64 { return p.lied.Load() }

func (l Lies) on() bool { return l.LagBlocks > 0 || l.InventReceipts }

// serveLies answers each call of one request under l.
func (p *Proxy) serveLies(w http.ResponseWriter, r *http.Request, body []byte, l Lies) {
	r = r.Clone(r.Context())
	r.Header.Del("Accept-Encoding") // answers are read and rewritten here: plain JSON
	calls, batch, ok := parseCalls(body)
	if !ok {
		p.passThrough(w, r, body)
		return
	}
	answers := make([]rpcAnswer, len(calls))
	for i, c := range calls {
		res, rpcErr, err := p.lie(r, c, l)
		if err != nil {
			http.Error(w, "upstream node unreachable", http.StatusBadGateway)
			return
		}
		answers[i] = rpcAnswer{JSONRPC: "2.0", ID: c.ID, Result: res, Error: rpcErr}
		if len(res) == 0 && len(rpcErr) == 0 {
			answers[i].Result = json.RawMessage("null")
		}
	}
	p.forwarded.Add(1)
	writeAnswers(w, answers, batch)
}

// lie answers one call: forwarded, rewritten, or made up.
func (p *Proxy) lie(r *http.Request, c rpcCall, l Lies) (json.RawMessage, json.RawMessage, error) {
	if l.InventReceipts && c.Method == "eth_sendRawTransaction" && len(c.Params) == 1 {
		var raw hexutil.Bytes
		var tx types.Transaction
		if json.Unmarshal(c.Params[0], &raw) == nil && tx.UnmarshalBinary(raw) == nil {
			p.lied.Add(1)
			h, _ := json.Marshal(tx.Hash())
			return h, nil, nil
		}
	}
	var head uint64
	if l.LagBlocks > 0 {
		res, _, err := p.call(r, "eth_blockNumber")
		if err != nil {
			return nil, nil, err
		}
		n, err := quantity(res)
		if err != nil {
			return nil, nil, err
		}
		if n > l.LagBlocks {
			head = n - l.LagBlocks
		}
		switch c.Method {
		case "eth_blockNumber":
			p.lied.Add(1)
			return json.RawMessage(strconv.Quote(hexutil.EncodeUint64(head))), nil, nil
		case "eth_getBlockByNumber":
			return p.lagBlock(r, c, head)
		case "eth_getTransactionCount", "eth_getBalance", "eth_call":
			if len(c.Params) == 2 && isLatest(c.Params[1]) {
				c.Params[1] = json.RawMessage(strconv.Quote(hexutil.EncodeUint64(head)))
			}
		}
	}
	res, rpcErr, err := p.call(r, c.Method, c.Params...)
	if err != nil || len(rpcErr) > 0 {
		return res, rpcErr, err
	}
	switch c.Method {
	case "eth_getTransactionReceipt", "eth_getTransactionByHash":
		if l.LagBlocks > 0 && !isNullJSON(res) {
			var at struct {
				BlockNumber *hexutil.Uint64 `json:"blockNumber"`
			}
			if json.Unmarshal(res, &at) == nil && at.BlockNumber != nil && uint64(*at.BlockNumber) > head {
				p.lied.Add(1)
				return json.RawMessage("null"), nil, nil
			}
		}
		if l.InventReceipts && c.Method == "eth_getTransactionReceipt" && isNullJSON(res) && len(c.Params) == 1 {
			return p.invent(r, c.Params[0])
		}
	}
	return res, nil, nil
}

// lagBlock answers eth_getBlockByNumber as of head.
func (p *Proxy) lagBlock(r *http.Request, c rpcCall, head uint64) (json.RawMessage, json.RawMessage, error) {
	if len(c.Params) != 2 {
		return p.call(r, c.Method, c.Params...)
	}
	var tag string
	_ = json.Unmarshal(c.Params[0], &tag)
	n := head
	switch tag {
	case "latest", "pending":
	case "safe", "finalized":
		res, rpcErr, err := p.call(r, c.Method, c.Params...)
		if err != nil || len(rpcErr) > 0 || isNullJSON(res) {
			return res, rpcErr, err
		}
		var b struct {
			Number hexutil.Uint64 `json:"number"`
		}
		if json.Unmarshal(res, &b) == nil && uint64(b.Number) <= head {
			return res, nil, nil
		}
	default:
		asked, err := hexutil.DecodeUint64(tag)
		if err != nil {
			return p.call(r, c.Method, c.Params...)
		}
		if asked > head {
			p.lied.Add(1)
			return json.RawMessage("null"), nil, nil
		}
		return p.call(r, c.Method, c.Params...)
	}
	p.lied.Add(1)
	return p.call(r, c.Method, json.RawMessage(strconv.Quote(hexutil.EncodeUint64(n))), c.Params[1])
}

// invent makes up a receipt for hash, kept for later asks.
func (p *Proxy) invent(r *http.Request, hash json.RawMessage) (json.RawMessage, json.RawMessage, error) {
	key := strings.ToLower(string(hash))
	p.mu.Lock()
	made, ok := p.invented[key]
	p.mu.Unlock()
	if !ok {
		res, rpcErr, err := p.call(r, "eth_getBlockByNumber", json.RawMessage(`"finalized"`), json.RawMessage("false"))
		if err != nil || len(rpcErr) > 0 {
			return nil, rpcErr, err
		}
		var b struct {
			Number string `json:"number"`
			Hash   string `json:"hash"`
		}
		if err := json.Unmarshal(res, &b); err != nil {
			return nil, nil, err
		}
		made, _ = json.Marshal(map[string]any{
			"transactionHash": json.RawMessage(hash), "transactionIndex": "0x0", "blockHash": b.Hash, "blockNumber": b.Number,
			"status": "0x1", "gasUsed": "0x5208", "cumulativeGasUsed": "0x5208", "effectiveGasPrice": "0x3b9aca00",
			"logs": []any{}, "logsBloom": "0x" + strings.Repeat("00", 256), "type": "0x2", "contractAddress": nil,
		})
		p.mu.Lock()
		p.invented[key] = made
		p.mu.Unlock()
	}
	p.lied.Add(1)
	return made, nil, nil
}

// call sends one call to the node: its result, or its JSON-RPC error.
func (p *Proxy) call(r *http.Request, method string, params ...json.RawMessage) (json.RawMessage, json.RawMessage, error) {
	if params == nil {
		params = []json.RawMessage{}
	}
	body, err := json.Marshal(rpcCall{JSONRPC: "2.0", ID: json.RawMessage("1"), Method: method, Params: params})
	if err != nil {
		return nil, nil, err
	}
	status, _, answer, err := p.forward(r, body)
	if err != nil {
		return nil, nil, err
	}
	if status != http.StatusOK {
		return nil, nil, errors.New("node answered HTTP " + strconv.Itoa(status))
	}
	var a rpcAnswer
	if err := json.Unmarshal(answer, &a); err != nil {
		return nil, nil, err
	}
	if len(a.Error) > 0 && string(a.Error) != "null" {
		return nil, a.Error, nil
	}
	return a.Result, nil, nil
}

func quantity(raw json.RawMessage) (uint64, error) {
	var q hexutil.Uint64
	err := json.Unmarshal(raw, &q)
	return uint64(q), err
}

func isLatest(raw json.RawMessage) bool {
	var tag string
	return json.Unmarshal(raw, &tag) == nil && (tag == "latest" || tag == "pending")
}

func isNullJSON(raw json.RawMessage) bool {
	raw = bytes.TrimSpace(raw)
	return len(raw) == 0 || string(raw) == "null"
}
