package audit

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"

	"github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/receipt"
)

// evmScanBatch is how many blocks one JSON-RPC batch call reads.
const evmScanBatch = 50

// evmReader reads an EVM chain (EtherLink). An account's transactions are
// numbered by its nonces, so the reader can tell whether it has seen them
// all: eth_getTransactionCount says how many were sent, keeper's list
// accounts for its confirmed anchors, and the blocks back from the head are
// scanned for the others.
type evmReader struct {
	name   string
	rc     *rpc.Client
	ec     *ethclient.Client
	caip2  string
	signer types.Signer
	scan   uint64
}

func newEVMReader(ctx context.Context, c Chain, o Options) (reader, error) {
	rc, err := rpc.DialContext(ctx, c.RPC)
	if err != nil {
		return nil, fmt.Errorf("%s: dial: %w", c.Name, err)
	}
	ec := ethclient.NewClient(rc)
	id, err := ec.ChainID(ctx)
	if err != nil {
		rc.Close()
		return nil, fmt.Errorf("%s: eth_chainId: %w", c.Name, err)
	}
	return &evmReader{name: c.Name, rc: rc, ec: ec, caip2: receipt.EVMNetwork(id.Uint64()),
		signer: types.LatestSignerForChainID(new(big.Int).Set(id)), scan: o.ScanBlocks}, nil
}

func (e *evmReader) close() { e.rc.Close() }

func (e *evmReader) network() string { return e.caip2 }

func (e *evmReader) read(ctx context.Context, account string, listed []evlog.Anchor, r *Report) ([]Anchored, error) {
	if !common.IsHexAddress(account) {
		return nil, fmt.Errorf("account %q is not an EVM address", account)
	}
	acct := common.HexToAddress(account)
	sent, err := e.ec.NonceAt(ctx, acct, nil)
	if err != nil {
		return nil, fmt.Errorf("eth_getTransactionCount %s: %w", acct.Hex(), err)
	}
	seen := map[uint64]bool{}
	var out []Anchored
	for _, a := range listed {
		got, nonce, err := e.checkListed(ctx, acct, a, r)
		if err != nil {
			return nil, err
		}
		if nonce >= 0 {
			seen[uint64(nonce)] = true
		}
		if got != nil {
			out = append(out, *got)
		}
	}
	need := map[uint64]bool{}
	for n := range sent {
		if !seen[n] {
			need[n] = true
		}
	}
	found, err := e.scanBack(ctx, acct, need, r)
	if err != nil {
		return nil, err
	}
	out = append(out, found...)
	if len(need) > 0 {
		what := "nonce " + ranges(need) + " is"
		if len(need) > 1 {
			what = "nonces " + ranges(need) + " are"
		}
		r.find(KindNonce, e.name, "%s sent %d transactions; %s neither among the anchors keeper lists nor in the last %d blocks, so not audited (raise --scan-blocks)",
			acct.Hex(), sent, what, e.scan)
	}
	return out, nil
}

// checkListed checks one anchor keeper lists against the chain: the
// transaction exists, succeeded, was sent by the account, sits in the
// block keeper names, and commits to the checkpoint size keeper names. It
// returns the anchor as read from the chain (nil when it is not one the
// account sent) and the nonce it accounts for (-1: none).
func (e *evmReader) checkListed(ctx context.Context, acct common.Address, a evlog.Anchor, r *Report) (*Anchored, int64, error) {
	if a.Network != "" && a.Network != e.caip2 {
		r.find(KindAnchor, e.name, "keeper lists tx %s on network %s, and the node is on %s", a.TxRef, a.Network, e.caip2)
	}
	h, ok := evmHash(a.TxRef)
	if !ok {
		r.find(KindAnchor, e.name, "keeper lists %q, which is not a transaction hash", a.TxRef)
		return nil, -1, nil
	}
	tx, pending, err := e.ec.TransactionByHash(ctx, h)
	if errors.Is(err, ethereum.NotFound) {
		r.find(KindAnchor, e.name, "keeper lists tx %s (checkpoint of %d entries), which the node does not have", a.TxRef, a.Size)
		return nil, -1, nil
	}
	if err != nil {
		return nil, -1, fmt.Errorf("eth_getTransactionByHash %s: %w", h.Hex(), err)
	}
	from, err := types.Sender(e.signer, tx)
	if err != nil || from != acct {
		r.find(KindAnchor, e.name, "keeper lists tx %s, which was not sent by the anchoring account %s (sender %s)", a.TxRef, acct.Hex(), from.Hex())
		return nil, -1, nil
	}
	nonce := int64(tx.Nonce())
	if pending {
		r.find(KindAnchor, e.name, "keeper lists tx %s as confirmed, and it is not in a block", a.TxRef)
		return nil, nonce, nil
	}
	rcpt, err := e.ec.TransactionReceipt(ctx, h)
	if err != nil {
		return nil, nonce, fmt.Errorf("eth_getTransactionReceipt %s: %w", h.Hex(), err)
	}
	if rcpt.Status != types.ReceiptStatusSuccessful {
		r.find(KindAnchor, e.name, "keeper lists tx %s, which failed in block %d", a.TxRef, rcpt.BlockNumber)
		return nil, nonce, nil
	}
	if rcpt.BlockNumber.Uint64() != a.Block || !strings.EqualFold(rcpt.BlockHash.Hex(), a.BlockHash) {
		r.find(KindAnchor, e.name, "keeper lists tx %s in block %d (%s), and it is in block %d (%s)", a.TxRef, a.Block, a.BlockHash, rcpt.BlockNumber, rcpt.BlockHash.Hex())
	}
	p, err := receipt.ParseEVMPayload(tx.Data())
	if err != nil || p.Checkpoint == nil {
		r.find(KindAnchor, e.name, "keeper lists tx %s as an anchor of %d entries, and it commits to no checkpoint", a.TxRef, a.Size)
		return nil, nonce, nil
	}
	if p.Checkpoint.Size != a.Size {
		r.find(KindAnchor, e.name, "keeper lists tx %s as an anchor of %d entries, and it commits to %d", a.TxRef, a.Size, p.Checkpoint.Size)
	}
	return &Anchored{Chain: e.name, Account: acct.Hex(), TxRef: h.Hex(), Block: rcpt.BlockNumber.Uint64(), Index: int(rcpt.TransactionIndex), Ref: *p.Checkpoint}, nonce, nil
}

// scanBack reads blocks back from the head, at most e.scan of them, until
// every nonce in need is found, and returns the checkpoint anchors among
// the transactions found. Found nonces leave need.
func (e *evmReader) scanBack(ctx context.Context, acct common.Address, need map[uint64]bool, r *Report) ([]Anchored, error) {
	if len(need) == 0 {
		return nil, nil
	}
	head, err := e.ec.BlockNumber(ctx)
	if err != nil {
		return nil, fmt.Errorf("eth_blockNumber: %w", err)
	}
	lowest := head + 1 - min(e.scan, head+1)
	var out []Anchored
	for hi := head; len(need) > 0; hi -= evmScanBatch {
		lo := lowest
		if hi >= lowest+evmScanBatch {
			lo = hi - evmScanBatch + 1
		}
		blocks := make([]*evmBlock, hi-lo+1)
		elems := make([]rpc.BatchElem, len(blocks))
		for i := range blocks {
			elems[i] = rpc.BatchElem{Method: "eth_getBlockByNumber", Args: []any{hexutil.EncodeUint64(hi - uint64(i)), true}, Result: &blocks[i]}
		}
		if err := e.rc.BatchCallContext(ctx, elems); err != nil {
			return nil, fmt.Errorf("eth_getBlockByNumber %d–%d: %w", lo, hi, err)
		}
		for i, el := range elems {
			if el.Error != nil {
				return nil, fmt.Errorf("eth_getBlockByNumber %d: %w", hi-uint64(i), el.Error)
			}
			if blocks[i] == nil {
				continue
			}
			got, err := e.fromBlock(ctx, acct, blocks[i], need, r)
			if err != nil {
				return nil, err
			}
			out = append(out, got...)
		}
		if lo == lowest {
			break
		}
	}
	return out, nil
}

type evmBlock struct {
	Number       hexutil.Uint64    `json:"number"`
	Transactions []json.RawMessage `json:"transactions"`
}

// fromBlock takes the account's transactions with needed nonces out of a
// block. The node's "from" picks them; the signature decides.
func (e *evmReader) fromBlock(ctx context.Context, acct common.Address, b *evmBlock, need map[uint64]bool, r *Report) ([]Anchored, error) {
	var out []Anchored
	for i, raw := range b.Transactions {
		var meta struct {
			From  common.Address `json:"from"`
			Nonce hexutil.Uint64 `json:"nonce"`
		}
		if err := json.Unmarshal(raw, &meta); err != nil || meta.From != acct || !need[uint64(meta.Nonce)] {
			continue
		}
		tx := new(types.Transaction)
		if err := tx.UnmarshalJSON(raw); err != nil {
			return nil, fmt.Errorf("block %d: transaction %d: %w", b.Number, i, err)
		}
		if from, err := types.Sender(e.signer, tx); err != nil || from != acct {
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: the node says %s sent tx %s, and its signature says otherwise", e.name, acct.Hex(), tx.Hash().Hex()))
			continue
		}
		delete(need, tx.Nonce())
		p, err := receipt.ParseEVMPayload(tx.Data())
		if err != nil || p.Checkpoint == nil {
			continue // not a checkpoint anchor: a batch root of keeper before the log, or another use of the account
		}
		rcpt, err := e.ec.TransactionReceipt(ctx, tx.Hash())
		if err != nil {
			return nil, fmt.Errorf("eth_getTransactionReceipt %s: %w", tx.Hash().Hex(), err)
		}
		if rcpt.Status != types.ReceiptStatusSuccessful {
			continue
		}
		out = append(out, Anchored{Chain: e.name, Account: acct.Hex(), TxRef: tx.Hash().Hex(), Block: uint64(b.Number), Index: i, Ref: *p.Checkpoint})
	}
	return out, nil
}

func evmHash(ref string) (common.Hash, bool) {
	s := strings.TrimPrefix(strings.TrimSpace(ref), "etherlink:")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != common.HashLength {
		return common.Hash{}, false
	}
	return common.BytesToHash(b), true
}

// ranges spells a set of numbers as sorted ranges: "0–2, 5".
func ranges(set map[uint64]bool) string {
	ns := make([]uint64, 0, len(set))
	for n := range set {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(ns[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d–%d", ns[i], ns[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
