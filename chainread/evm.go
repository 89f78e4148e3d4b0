package chainread

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EVMConfirmations is how deep a block must be for EVM to call it final on
// a node that does not answer the `finalized` block tag.
const EVMConfirmations = 64

// EVMNetwork is the CAIP-2 id of the EVM chain chainID: "eip155:<id>".
func EVMNetwork(chainID uint64) string { return "eip155:" + strconv.FormatUint(chainID, 10) }

// EVMHash parses a transaction reference: 32 bytes in hex, "0x" optional,
// an optional "etherlink:" prefix, surrounding space trimmed.
func EVMHash(ref string) ([32]byte, error) {
	s := strings.TrimSpace(ref)
	s = strings.TrimPrefix(s, "etherlink:")
	s = strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != 32 {
		return [32]byte{}, fmt.Errorf("etherlink: %q is not a transaction hash (32 bytes in hex)", ref)
	}
	return [32]byte(b), nil
}

// ParseEVMAddress parses an address: "0x" and 40 hex digits, in any case
// (an EIP-55 checksum is not checked).
func ParseEVMAddress(s string) ([20]byte, error) {
	var a [20]byte
	if (!strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X")) || len(s) != 42 {
		return a, fmt.Errorf("%q is not an EVM address (0x and 40 hex digits)", s)
	}
	if _, err := hex.Decode(a[:], []byte(s[2:])); err != nil {
		return a, fmt.Errorf("%q is not an EVM address (0x and 40 hex digits)", s)
	}
	return a, nil
}

// ChecksumAddress is a in EIP-55 checksummed 0x hex.
func ChecksumAddress(a [20]byte) string {
	lower := hex.EncodeToString(a[:])
	h := keccak256([]byte(lower))
	out := []byte("0x" + lower)
	for i := range lower {
		nibble := h[i/2] >> 4
		if i%2 == 1 {
			nibble = h[i/2] & 0xf
		}
		if c := lower[i]; c >= 'a' && nibble >= 8 {
			out[2+i] = c - 'a' + 'A'
		}
	}
	return string(out)
}

// EVMTransactionCount is account's nonce (eth_getTransactionCount) at
// block, a block number in hex or a tag ("latest", "pending", "finalized").
func EVMTransactionCount(ctx context.Context, c Caller, account [20]byte, block string) (uint64, error) {
	raw, err := c.Call(ctx, "eth_getTransactionCount", hex0x(account[:]), block)
	if err != nil {
		return 0, fmt.Errorf("etherlink: eth_getTransactionCount: %w", err)
	}
	var n evmUint
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, fmt.Errorf("etherlink: eth_getTransactionCount: %w: %v", ErrMalformed, err)
	}
	return uint64(n), nil
}

// evmReceipt is the part of eth_getTransactionReceipt's answer EVM reads.
type evmReceipt struct {
	TransactionHash *evmWord `json:"transactionHash"`
	BlockHash       *evmWord `json:"blockHash"`
	BlockNumber     *evmUint `json:"blockNumber"`
	Status          *evmUint `json:"status"` // absent before Byzantium
}

// EVM asks the node c about the transaction with hash h: its chain
// (eth_chainId, as "eip155:<id>"); whether the node has it; the
// transaction itself, rebuilt and checked by DecodeEVMTransaction (so its
// sender, nonce and calldata are the chain's, not the node's word); whether
// it succeeded and in which block (its receipt); that block's time, from
// its header rehashed against the receipt's block hash (DecodeEVMHeader);
// and whether the block is final: at or below the node's `finalized`
// block or, where the node lacks that tag, EVMConfirmations deep.
//
// A transaction the node does not know, one still pending, one reverted or
// one whose block is being reorganised is no error: Tx says so (Found,
// Succeeded, Final and Detail). Errors are those of the calls, named by
// method, and answers that do not decode or do not hash to what was asked
// (wrapping ErrMalformed).
func EVM(ctx context.Context, c Caller, h [32]byte) (Tx, error) {
	call := func(method string, params ...any) (json.RawMessage, error) {
		raw, err := c.Call(ctx, method, params...)
		if err != nil {
			return nil, fmt.Errorf("etherlink: %s: %w", method, err)
		}
		return raw, nil
	}
	hash := hex0x(h[:])

	raw, err := call("eth_chainId")
	if err != nil {
		return Tx{}, err
	}
	var id evmUint
	if err := json.Unmarshal(raw, &id); err != nil {
		return Tx{}, fmt.Errorf("etherlink: eth_chainId: %w: %v", ErrMalformed, err)
	}
	v := Tx{Network: EVMNetwork(uint64(id))}

	if raw, err = call("eth_getTransactionByHash", hash); err != nil {
		return v, err
	}
	if isNull(raw) {
		v.Detail = fmt.Sprintf("transaction %s is not known to the node", hash)
		return v, nil
	}
	v.Found = true
	tx, err := DecodeEVMTransaction(raw, h, uint64(id))
	if err != nil {
		return v, fmt.Errorf("etherlink: eth_getTransactionByHash %s: %w", hash, err)
	}
	v.Sender, v.Nonce, v.Payloads = ChecksumAddress(tx.Sender), tx.Nonce, [][]byte{tx.Data}

	if raw, err = call("eth_getTransactionReceipt", hash); err != nil {
		return v, err
	}
	if isNull(raw) {
		v.Detail = "pending: not yet included in a block"
		return v, nil
	}
	rcpt, err := decodeEVMReceipt(raw, h)
	if err != nil {
		return v, fmt.Errorf("etherlink: eth_getTransactionReceipt %s: %w", hash, err)
	}
	v.Block, v.BlockHash = uint64(*rcpt.BlockNumber), hex0x(rcpt.BlockHash[:])
	v.Succeeded = rcpt.Status == nil || *rcpt.Status == 1
	if !v.Succeeded {
		v.Detail = fmt.Sprintf("reverted (receipt status 0) in block %d", v.Block)
		return v, nil
	}

	canon, err := evmBlock(ctx, c, "0x"+strconv.FormatUint(v.Block, 16))
	if err != nil {
		return v, err
	}
	if canon == nil || canon.Hash != [32]byte(*rcpt.BlockHash) {
		v.Detail = fmt.Sprintf("included in block %d, which is being reorganised", v.Block)
		return v, nil
	}
	if canon.Number != v.Block {
		return v, fmt.Errorf("etherlink: eth_getBlockByNumber: %w: block %d answered as block %d", ErrMalformed, v.Block, canon.Number)
	}
	v.BlockTime = time.Unix(int64(canon.Time), 0).UTC()
	return v, evmFinality(ctx, c, &v)
}

// decodeEVMReceipt reads the receipt of transaction h.
func decodeEVMReceipt(raw json.RawMessage, h [32]byte) (evmReceipt, error) {
	var r evmReceipt
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, fmt.Errorf("%w: the receipt does not decode: %v", ErrMalformed, err)
	}
	if err := evmRequire("receipt", evmField{"blockHash", r.BlockHash != nil}, evmField{"blockNumber", r.BlockNumber != nil}); err != nil {
		return r, err
	}
	if r.TransactionHash != nil && [32]byte(*r.TransactionHash) != h {
		return r, fmt.Errorf("%w: the node returned the receipt of transaction %s", ErrMalformed, hex0x(r.TransactionHash[:]))
	}
	if r.Status != nil && *r.Status > 1 {
		return r, fmt.Errorf("%w: the receipt's status is %d, neither 0 nor 1", ErrMalformed, *r.Status)
	}
	return r, nil
}

// evmFinality says whether v's block is final: at or below the node's
// finalized block or, on a node without the finalized tag (an RPC error or
// null), EVMConfirmations deep below latest.
func evmFinality(ctx context.Context, c Caller, v *Tx) error {
	fin, err := evmBlock(ctx, c, "finalized")
	if err != nil && !errors.As(err, new(*RPCError)) {
		return err
	}
	if err == nil && fin != nil {
		v.Final = v.Block <= fin.Number
		if v.Final {
			v.Detail = fmt.Sprintf("final: block %d is at or below the finalized block %d", v.Block, fin.Number)
		} else {
			v.Detail = fmt.Sprintf("included in block %d, not final yet (finalized block %d)", v.Block, fin.Number)
		}
		return nil
	}
	latest, err := evmBlock(ctx, c, "latest")
	if err != nil {
		return err
	}
	depth := uint64(0)
	if latest != nil && latest.Number >= v.Block {
		depth = latest.Number - v.Block + 1
	}
	v.Final = depth >= EVMConfirmations
	v.Detail = fmt.Sprintf("included in block %d, %d of %d confirmations (node has no finalized block tag)", v.Block, depth, EVMConfirmations)
	return nil
}

// evmBlock is the header of block (a number in hex or a tag), rehashed;
// nil when the node has no such block.
func evmBlock(ctx context.Context, c Caller, block string) (*EVMHeader, error) {
	raw, err := c.Call(ctx, "eth_getBlockByNumber", block, false)
	if err != nil {
		return nil, fmt.Errorf("etherlink: eth_getBlockByNumber %s: %w", block, err)
	}
	if isNull(raw) {
		return nil, nil
	}
	h, err := DecodeEVMHeader(raw)
	if err != nil {
		return nil, fmt.Errorf("etherlink: eth_getBlockByNumber %s: %w", block, err)
	}
	return &h, nil
}
