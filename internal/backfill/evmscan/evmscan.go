// Package evmscan reads a wallet's history from an EVM node's JSON-RPC
// endpoint: native transfers to or from the wallet from block bodies, the gas
// it paid from receipts, and ERC-20 Transfer events naming it from
// eth_getLogs, whose ranges are split in half whenever the node refuses one or
// answers with suspiciously many logs.
//
// What it cannot see: value moved by contract-internal calls (that needs
// traces, which nodes rarely serve); it shows up as a difference when the
// balances are reconciled.
package evmscan

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/keeperhq/keeper/internal/backfill/scan"
	"github.com/keeperhq/keeper/internal/chains/rpclimit"
	"github.com/keeperhq/keeper/internal/chains/rpcpool"
	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/internal/retry"
)

// Defaults.
const (
	DefaultChunkBlocks = 500
	DefaultBatchSize   = 100
	DefaultMaxLogs     = 10_000
	fetchConcurrency   = 4
)

// transferTopic is keccak256("Transfer(address,address,uint256)").
var transferTopic = common.HexToHash("0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef")

// Config configures a Scanner.
type Config struct {
	Network       string // chain name, e.g. "etherlink"
	RPCURL        string
	ChunkBlocks   int    // blocks per chunk, i.e. between checkpoints (default 500)
	BatchSize     int    // calls per JSON-RPC batch (default 100)
	MaxLogs       int    // an eth_getLogs answer this long is split, in case the node truncated it (default 10,000)
	Confirmations uint64 // 0: the node's `finalized` block is the head; N: N blocks below the latest
	RPCRate       int    // requests a second to the endpoint, shared with keeper's other clients of it (0: no cap)
	// ArchiveURL is an endpoint that keeps every block's state (an archive
	// node), asked for the balances of a block whose state RPCURL no longer
	// has; empty: none (scan.ArchiveSetting names its setting).
	ArchiveURL string
}

// Scanner scans EVM history. It is safe for concurrent use.
type Scanner struct {
	cfg     Config
	rpc     *rpc.Client
	archive *rpc.Client // nil without Config.ArchiveURL
}

// New returns a scanner for the endpoint. It does not connect yet.
func New(ctx context.Context, cfg Config) (*Scanner, error) {
	cfg.ChunkBlocks = cmp.Or(cfg.ChunkBlocks, DefaultChunkBlocks)
	cfg.BatchSize = cmp.Or(cfg.BatchSize, DefaultBatchSize)
	cfg.MaxLogs = cmp.Or(cfg.MaxLogs, DefaultMaxLogs)
	hc := &http.Client{Transport: rpcpool.TransportFor(rpcpool.EVM, cfg.RPCURL, float64(cfg.RPCRate), http.DefaultTransport)}
	c, err := rpc.DialOptions(ctx, cfg.RPCURL, rpc.WithHTTPClient(hc))
	if err != nil {
		return nil, fmt.Errorf("%s backfill: dial %s: %w", cfg.Network, cfg.RPCURL, err)
	}
	s := &Scanner{cfg: cfg, rpc: c}
	if cfg.ArchiveURL != "" {
		// Its own endpoint, often a paid one: paced on its own, and only
		// asked what the node cannot answer.
		ahc := &http.Client{Transport: rpclimit.For(cfg.ArchiveURL, 0).Transport(http.DefaultTransport)}
		if s.archive, err = rpc.DialOptions(ctx, cfg.ArchiveURL, rpc.WithHTTPClient(ahc)); err != nil {
			c.Close()
			return nil, fmt.Errorf("%s backfill: dial the archive endpoint %s: %w", cfg.Network, redact.Endpoint(cfg.ArchiveURL), err)
		}
	}
	return s, nil
}

// Close closes the RPC clients.
func (s *Scanner) Close() {
	s.rpc.Close()
	if s.archive != nil {
		s.archive.Close()
	}
}

// Network implements scan.Scanner.
func (s *Scanner) Network() string { return s.cfg.Network }

// Unit implements scan.Scanner.
func (s *Scanner) Unit() string { return "blocks" }

// ParseAddress accepts a 0x-prefixed 20-byte hex address. Mixed case must be
// a valid EIP-55 checksum; the canonical form is lower case.
func (s *Scanner) ParseAddress(a string) (string, error) {
	return ParseAddress(a)
}

// ParseAddress is the check behind Scanner.ParseAddress.
func ParseAddress(a string) (string, error) {
	if len(a) != 42 || !strings.HasPrefix(a, "0x") || !common.IsHexAddress(a) {
		return "", retry.Permanent(fmt.Errorf("%q is not an EVM address: 0x followed by 40 hex digits", clip(a)))
	}
	body := a[2:]
	if strings.ToLower(body) != body && strings.ToUpper(body) != body && common.HexToAddress(a).Hex() != a {
		return "", retry.Permanent(fmt.Errorf("%q fails its EIP-55 checksum (mixed case must be the checksummed form)", a))
	}
	return strings.ToLower(a), nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "…"
	}
	return s
}

// Finalized implements scan.Scanner.
func (s *Scanner) Finalized(ctx context.Context) (uint64, error) {
	var n uint64
	err := retry.Read(ctx, scan.CallTimeout, func(ctx context.Context) error {
		var h *struct {
			Number hexutil.Uint64 `json:"number"`
		}
		tag := "finalized"
		if s.cfg.Confirmations > 0 {
			tag = "latest"
		}
		if err := s.rpc.CallContext(ctx, &h, "eth_getBlockByNumber", tag, false); err != nil {
			return fmt.Errorf("%s: read the %s block: %w", s.cfg.Network, tag, err)
		}
		if h == nil {
			return fmt.Errorf("%s: the node has no %s block yet", s.cfg.Network, tag)
		}
		n = uint64(h.Number)
		if s.cfg.Confirmations > 0 {
			n = uint64(max(int64(n)-int64(s.cfg.Confirmations), 0))
		}
		return nil
	})
	return n, err
}

// JSON shapes, decoded leniently: only what the scan needs.
type rpcBlock struct {
	Number       hexutil.Uint64 `json:"number"`
	Timestamp    hexutil.Uint64 `json:"timestamp"`
	Transactions []rpcTx        `json:"transactions"`
}

type rpcTx struct {
	Hash  common.Hash     `json:"hash"`
	From  common.Address  `json:"from"`
	To    *common.Address `json:"to"`
	Value *hexutil.Big    `json:"value"`
}

type rpcReceipt struct {
	TxHash            common.Hash     `json:"transactionHash"`
	Status            *hexutil.Uint64 `json:"status"`
	GasUsed           hexutil.Big     `json:"gasUsed"`
	EffectiveGasPrice *hexutil.Big    `json:"effectiveGasPrice"`
	BlobGasUsed       *hexutil.Big    `json:"blobGasUsed"`
	BlobGasPrice      *hexutil.Big    `json:"blobGasPrice"`
	L1Fee             *hexutil.Big    `json:"l1Fee"` // rollups that charge for data posted to L1
	ContractAddress   *common.Address `json:"contractAddress"`
}

type rpcLog struct {
	Address     common.Address `json:"address"`
	Topics      []common.Hash  `json:"topics"`
	Data        hexutil.Bytes  `json:"data"`
	BlockNumber hexutil.Uint64 `json:"blockNumber"`
	TxHash      common.Hash    `json:"transactionHash"`
	LogIndex    hexutil.Uint   `json:"logIndex"`
	Removed     bool           `json:"removed"`
}

// fee is what the sender paid for the transaction.
func (r *rpcReceipt) fee() *big.Int {
	fee := new(big.Int)
	if r.EffectiveGasPrice != nil {
		fee.Mul(r.GasUsed.ToInt(), r.EffectiveGasPrice.ToInt())
	}
	if r.BlobGasUsed != nil && r.BlobGasPrice != nil {
		fee.Add(fee, new(big.Int).Mul(r.BlobGasUsed.ToInt(), r.BlobGasPrice.ToInt()))
	}
	if r.L1Fee != nil {
		fee.Add(fee, r.L1Fee.ToInt())
	}
	return fee
}

func (r *rpcReceipt) succeeded() bool { return r.Status == nil || *r.Status == 1 }

// Scan implements scan.Scanner: chunks of ChunkBlocks blocks from
// job.From.Block to job.Target.
func (s *Scanner) Scan(ctx context.Context, job scan.Job, emit func(scan.Chunk) error) error {
	wallet := common.HexToAddress(job.Wallet)
	if _, err := ParseAddress(job.Wallet); err != nil {
		return err
	}
	next := max(job.From.Block, job.Start)
	total := job.Target - job.Start + 1
	for next <= job.Target {
		if err := ctx.Err(); err != nil {
			return err
		}
		to := min(next+uint64(s.cfg.ChunkBlocks)-1, job.Target)
		transfers, err := s.scanRange(ctx, wallet, next, to)
		if err != nil {
			return err
		}
		next = to + 1
		if err := emit(scan.Chunk{Transfers: transfers, Cursor: scan.Cursor{Block: next}, Scanned: next - job.Start, Total: total}); err != nil {
			return err
		}
	}
	return nil
}

// scanRange finds the wallet's transfers in blocks [from, to].
func (s *Scanner) scanRange(ctx context.Context, wallet common.Address, from, to uint64) ([]scan.Transfer, error) {
	blocks, err := s.blocks(ctx, from, to)
	if err != nil {
		return nil, err
	}
	times := make(map[uint64]time.Time, len(blocks))
	var involved []rpcTx
	txBlock := map[common.Hash]*rpcBlock{}
	for _, b := range blocks {
		times[uint64(b.Number)] = time.Unix(int64(b.Timestamp), 0).UTC()
		for _, tx := range b.Transactions {
			if tx.From == wallet || (tx.To != nil && *tx.To == wallet) {
				involved = append(involved, tx)
				txBlock[tx.Hash] = b
			}
		}
	}
	receipts, err := s.receipts(ctx, involved)
	if err != nil {
		return nil, err
	}
	var out []scan.Transfer
	for i, tx := range involved {
		r := receipts[i]
		b := txBlock[tx.Hash]
		base := scan.Transfer{Tx: tx.Hash.Hex(), Asset: scan.NativeAsset, Block: uint64(b.Number), BlockTime: times[uint64(b.Number)]}
		to := common.Address{}
		if tx.To != nil {
			to = *tx.To
		} else if r.ContractAddress != nil {
			to = *r.ContractAddress
		}
		if v := tx.Value.ToInt(); r.succeeded() && v.Sign() > 0 {
			t := base
			t.Kind, t.From, t.To, t.Amount = scan.KindNative, lower(tx.From), lower(to), new(big.Int).Set(v)
			t.Direction = direction(wallet, tx.From, to)
			out = append(out, t)
		}
		if tx.From == wallet {
			if fee := r.fee(); fee.Sign() > 0 {
				t := base
				t.Kind, t.From, t.To, t.Amount, t.Direction = scan.KindFee, lower(wallet), "", fee, scan.Out
				out = append(out, t)
			}
		}
	}
	logs, err := s.tokenLogs(ctx, wallet, from, to)
	if err != nil {
		return nil, err
	}
	for _, l := range logs {
		src, dst := common.BytesToAddress(l.Topics[1][12:]), common.BytesToAddress(l.Topics[2][12:])
		out = append(out, scan.Transfer{
			Tx: l.TxHash.Hex(), Kind: scan.KindToken, Index: int(l.LogIndex), Asset: lower(l.Address),
			From: lower(src), To: lower(dst), Amount: new(big.Int).SetBytes(l.Data), Direction: direction(wallet, src, dst),
			Block: uint64(l.BlockNumber), BlockTime: times[uint64(l.BlockNumber)],
		})
	}
	return out, nil
}

func lower(a common.Address) string { return strings.ToLower(a.Hex()) }

func direction(wallet, from, to common.Address) scan.Direction {
	switch {
	case from == wallet && to == wallet:
		return scan.Self
	case from == wallet:
		return scan.Out
	}
	return scan.In
}

// blocks fetches [from, to] with full transactions, in JSON-RPC batches of
// BatchSize, a few batches at once.
func (s *Scanner) blocks(ctx context.Context, from, to uint64) ([]*rpcBlock, error) {
	out := make([]*rpcBlock, to-from+1)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		ferr error
		sem  = make(chan struct{}, fetchConcurrency)
	)
	for lo := from; lo <= to; lo += uint64(s.cfg.BatchSize) {
		hi := min(lo+uint64(s.cfg.BatchSize)-1, to)
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			err := retry.Read(ctx, scan.CallTimeout, func(ctx context.Context) error {
				elems := make([]rpc.BatchElem, 0, hi-lo+1)
				for n := lo; n <= hi; n++ {
					elems = append(elems, rpc.BatchElem{Method: "eth_getBlockByNumber", Args: []any{hexutil.EncodeUint64(n), true}, Result: &out[n-from]})
				}
				if err := s.rpc.BatchCallContext(ctx, elems); err != nil {
					return fmt.Errorf("%s: read blocks %d–%d: %w", s.cfg.Network, lo, hi, err)
				}
				for i, e := range elems {
					n := lo + uint64(i)
					if e.Error != nil {
						return fmt.Errorf("%s: read block %d: %w", s.cfg.Network, n, e.Error)
					}
					if out[n-from] == nil {
						return fmt.Errorf("%s: block %d is not available from the node", s.cfg.Network, n)
					}
				}
				return nil
			})
			if err != nil {
				mu.Lock()
				ferr = errors.Join(ferr, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ferr != nil {
		return nil, ferr
	}
	return out, nil
}

// receipts fetches the receipts of txs, in order.
func (s *Scanner) receipts(ctx context.Context, txs []rpcTx) ([]*rpcReceipt, error) {
	out := make([]*rpcReceipt, len(txs))
	for lo := 0; lo < len(txs); lo += s.cfg.BatchSize {
		hi := min(lo+s.cfg.BatchSize, len(txs))
		err := retry.Read(ctx, scan.CallTimeout, func(ctx context.Context) error {
			elems := make([]rpc.BatchElem, 0, hi-lo)
			for i := lo; i < hi; i++ {
				elems = append(elems, rpc.BatchElem{Method: "eth_getTransactionReceipt", Args: []any{txs[i].Hash}, Result: &out[i]})
			}
			if err := s.rpc.BatchCallContext(ctx, elems); err != nil {
				return fmt.Errorf("%s: read receipts: %w", s.cfg.Network, err)
			}
			for i, e := range elems {
				if e.Error != nil {
					return fmt.Errorf("%s: read receipt of %s: %w", s.cfg.Network, txs[lo+i].Hash.Hex(), e.Error)
				}
				if out[lo+i] == nil {
					return fmt.Errorf("%s: no receipt for %s", s.cfg.Network, txs[lo+i].Hash.Hex())
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tokenLogs returns the ERC-20 Transfer events in [from, to] with the wallet
// as sender or receiver, each once, in chain order.
func (s *Scanner) tokenLogs(ctx context.Context, wallet common.Address, from, to uint64) ([]rpcLog, error) {
	w := common.BytesToHash(wallet.Bytes())
	sent, err := s.logs(ctx, from, to, [][]common.Hash{{transferTopic}, {w}})
	if err != nil {
		return nil, err
	}
	received, err := s.logs(ctx, from, to, [][]common.Hash{{transferTopic}, nil, {w}})
	if err != nil {
		return nil, err
	}
	type key struct {
		tx  common.Hash
		idx uint
	}
	seen := map[key]bool{}
	var out []rpcLog
	for _, l := range append(sent, received...) {
		// ERC-721 Transfer has the same signature with the token id as a
		// fourth topic; ERC-20's value is the 32-byte data.
		if l.Removed || len(l.Topics) != 3 || len(l.Data) != 32 {
			continue
		}
		k := key{l.TxHash, uint(l.LogIndex)}
		if !seen[k] {
			seen[k] = true
			out = append(out, l)
		}
	}
	return out, nil
}

// logs runs eth_getLogs over [from, to], splitting the range in half when the
// node refuses it as too large or answers with MaxLogs or more entries.
func (s *Scanner) logs(ctx context.Context, from, to uint64, topics [][]common.Hash) ([]rpcLog, error) {
	var out []rpcLog
	filter := map[string]any{"fromBlock": hexutil.EncodeUint64(from), "toBlock": hexutil.EncodeUint64(to), "topics": topics}
	err := retry.Read(ctx, scan.CallTimeout, func(ctx context.Context) error {
		out = nil
		err := s.rpc.CallContext(ctx, &out, "eth_getLogs", filter)
		if err != nil && refusedAsTooLarge(err) {
			return errSplit{err}
		}
		return err
	})
	var split errSplit
	switch {
	case errors.As(err, &split) && from < to:
	case errors.As(err, &split):
		return nil, fmt.Errorf("%s: eth_getLogs for block %d alone: %w", s.cfg.Network, from, split.err)
	case err != nil:
		return nil, fmt.Errorf("%s: eth_getLogs %d–%d: %w", s.cfg.Network, from, to, err)
	case len(out) >= s.cfg.MaxLogs && from < to:
	default:
		return out, nil
	}
	mid := from + (to-from)/2
	left, err := s.logs(ctx, from, mid, topics)
	if err != nil {
		return nil, err
	}
	right, err := s.logs(ctx, mid+1, to, topics)
	if err != nil {
		return nil, err
	}
	return append(left, right...), nil
}

// errSplit marks a refusal that a smaller range may avoid; it is permanent
// for this range so Retry does not ask again.
type errSplit struct{ err error }

func (e errSplit) Error() string { return e.err.Error() }
func (e errSplit) Unwrap() error { return retry.Permanent(e.err) }

// refusedAsTooLarge recognises the ways nodes and providers refuse a log
// query for its size: geth's and Erigon's result limits, -32005 "limit
// exceeded", block-range caps and response-size caps.
func refusedAsTooLarge(err error) bool {
	var rerr rpc.Error
	if !errors.As(err, &rerr) {
		return false
	}
	if rerr.ErrorCode() == -32005 {
		return true
	}
	msg := strings.ToLower(rerr.Error())
	for _, s := range []string{"more than", "too many", "too large", "block range", "range is too", "range too", "limit exceeded", "exceeds", "response size", "query timeout"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// Holdings implements scan.Scanner: eth_getBalance and ERC-20 balanceOf
// at block at, in one batch. A node that pruned that block's state answers
// "not known" (Pruned), not an error; with an archive endpoint, those
// balances are read there instead, and an archive that has not got that
// state either is a permanent error naming its setting: no retry can make
// it an archive node.
func (s *Scanner) Holdings(ctx context.Context, wallet string, at uint64, assets []string) ([]scan.Holding, error) {
	out, err := s.holdings(ctx, s.rpc, wallet, at, assets)
	if err != nil || s.archive == nil {
		return out, err
	}
	var pruned []string
	for _, h := range out {
		if h.Pruned {
			pruned = append(pruned, h.Asset)
		}
	}
	if len(pruned) == 0 {
		return out, nil
	}
	got, err := s.holdings(ctx, s.archive, wallet, at, pruned)
	if err != nil {
		return nil, fmt.Errorf("%s (the archive endpoint): %w", scan.ArchiveSetting(s.cfg.Network), err)
	}
	for _, h := range got {
		if h.Pruned {
			setting := scan.ArchiveSetting(s.cfg.Network)
			return nil, retry.Permanent(fmt.Errorf("%s: the wallet's balances at block %d are in neither the node's state nor that of the "+
				"archive endpoint %s (%s): set %s to an archive node of this chain, one that keeps every block's state",
				s.cfg.Network, at, setting, h.Detail, setting))
		}
		out[slices.IndexFunc(out, func(o scan.Holding) bool { return o.Asset == h.Asset })] = h
	}
	return out, nil
}

// holdings reads the balances at block at from one endpoint.
func (s *Scanner) holdings(ctx context.Context, c *rpc.Client, wallet string, at uint64, assets []string) ([]scan.Holding, error) {
	w := common.HexToAddress(wallet)
	block := hexutil.EncodeUint64(at)
	out := make([]scan.Holding, len(assets))
	err := retry.Read(ctx, scan.CallTimeout, func(ctx context.Context) error {
		vals := make([]*hexutil.Big, len(assets))
		elems := make([]rpc.BatchElem, len(assets))
		for i, a := range assets {
			if a == scan.NativeAsset {
				elems[i] = rpc.BatchElem{Method: "eth_getBalance", Args: []any{w, block}, Result: &vals[i]}
				continue
			}
			data := append(common.FromHex("0x70a08231"), common.LeftPadBytes(w.Bytes(), 32)...) // balanceOf(address)
			call := map[string]any{"to": common.HexToAddress(a), "data": hexutil.Bytes(data)}
			elems[i] = rpc.BatchElem{Method: "eth_call", Args: []any{call, block}, Result: new(hexutil.Bytes)}
		}
		if err := c.BatchCallContext(ctx, elems); err != nil {
			return fmt.Errorf("%s: read balances at block %d: %w", s.cfg.Network, at, err)
		}
		for i, e := range elems {
			h, err := s.holding(wallet, at, assets[i], e, vals[i])
			if err != nil {
				return err
			}
			out[i] = h
		}
		return nil
	})
	return out, err
}

// holding reads one answer of the balances batch.
func (s *Scanner) holding(wallet string, at uint64, asset string, e rpc.BatchElem, val *hexutil.Big) (scan.Holding, error) {
	h := scan.Holding{Asset: asset}
	switch {
	case e.Error != nil && stateUnavailable(e.Error):
		h.Pruned = true
		h.Detail = fmt.Sprintf("no state of block %d: %v", at, e.Error)
	case e.Error != nil && asset != scan.NativeAsset:
		h.Detail = fmt.Sprintf("balanceOf on %s failed: %v", asset, e.Error)
	case e.Error != nil:
		return h, fmt.Errorf("%s: read balance of %s at block %d: %w", s.cfg.Network, asset, at, e.Error)
	case asset == scan.NativeAsset && val != nil:
		h.Amount, h.Known = val.ToInt(), true
	case asset != scan.NativeAsset:
		b := *e.Result.(*hexutil.Bytes)
		if len(b) != 32 {
			h.Detail = fmt.Sprintf("token %s answered balanceOf with %d bytes, not 32", asset, len(b))
			break
		}
		h.Amount, h.Known = new(big.Int).SetBytes(b), true
	default:
		return h, fmt.Errorf("%s: empty balance answer for %s", s.cfg.Network, wallet)
	}
	return h, nil
}

// stateUnavailable recognises a node saying it no longer has (or never had)
// the state of a block: geth's path scheme, hash scheme, Erigon, Nethermind,
// anvil (a block below its height: a block above it is one the node has not
// seen yet, worth a retry) and others.
func stateUnavailable(err error) bool {
	msg := strings.ToLower(err.Error())
	if m := outOfRange.FindStringSubmatch(msg); m != nil {
		height, _ := strconv.ParseUint(m[1], 10, 64)
		requested, _ := strconv.ParseUint(m[2], 10, 64)
		return requested < height
	}
	for _, s := range []string{"historical state", "missing trie node", "state not available", "state is not available", "state unavailable",
		"no state available", "pruned", "header not found", "unknown block"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// outOfRange is anvil's answer for a block whose state it no longer keeps:
// "BlockOutOfRangeError: block height is 9069 but requested was 0".
var outOfRange = regexp.MustCompile(`block height is (\d+) but requested was (\d+)`)
