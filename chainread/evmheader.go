package chainread

import (
	"encoding/json"
	"fmt"
)

// ErrHeaderHash marks a block header whose fields do not hash to the hash
// the node states for it: the node changed a field (its time, say) or
// invented the block. It wraps ErrMalformed.
var ErrHeaderHash = fmt.Errorf("%w: the block header does not hash to its hash", ErrMalformed)

// EVMHeader is a block header rehashed against its stated hash.
type EVMHeader struct {
	Hash       [32]byte
	ParentHash [32]byte
	Number     uint64
	Time       uint64 // seconds since the Unix epoch
}

// evmHeaderJSON is a block as eth_getBlockByNumber answers it; only the
// header's fields are read.
type evmHeaderJSON struct {
	Hash             *evmWord     `json:"hash"`
	ParentHash       *evmWord     `json:"parentHash"`
	UncleHash        *evmWord     `json:"sha3Uncles"`
	Miner            *evmAddr     `json:"miner"`
	StateRoot        *evmWord     `json:"stateRoot"`
	TransactionsRoot *evmWord     `json:"transactionsRoot"`
	ReceiptsRoot     *evmWord     `json:"receiptsRoot"`
	LogsBloom        *evmBytes    `json:"logsBloom"`
	Difficulty       *evmQuantity `json:"difficulty"`
	Number           *evmUint     `json:"number"`
	GasLimit         *evmUint     `json:"gasLimit"`
	GasUsed          *evmUint     `json:"gasUsed"`
	Timestamp        *evmUint     `json:"timestamp"`
	ExtraData        *evmBytes    `json:"extraData"`
	MixHash          *evmWord     `json:"mixHash"`
	Nonce            *evmBytes    `json:"nonce"`

	// Fork fields, each present from its fork on.
	BaseFeePerGas         *evmQuantity `json:"baseFeePerGas"`         // London
	WithdrawalsRoot       *evmWord     `json:"withdrawalsRoot"`       // Shanghai
	BlobGasUsed           *evmUint     `json:"blobGasUsed"`           // Cancun
	ExcessBlobGas         *evmUint     `json:"excessBlobGas"`         // Cancun
	ParentBeaconBlockRoot *evmWord     `json:"parentBeaconBlockRoot"` // Cancun
	RequestsHash          *evmWord     `json:"requestsHash"`          // Prague
	BlockAccessListHash   *evmWord     `json:"blockAccessListHash"`   // Amsterdam
	SlotNumber            *evmUint     `json:"slotNumber"`            // Amsterdam
}

// DecodeEVMHeader reads a block header (as eth_getBlockByNumber or
// eth_getBlockByHash answer it, with or without full transactions),
// RLP-encodes its consensus fields in order (parentHash, sha3Uncles,
// miner, stateRoot, transactionsRoot, receiptsRoot, logsBloom, difficulty,
// number, gasLimit, gasUsed, timestamp, extraData, mixHash, nonce, then
// those fork fields present: baseFeePerGas, withdrawalsRoot, blobGasUsed,
// excessBlobGas, parentBeaconBlockRoot, requestsHash, blockAccessListHash,
// slotNumber) and checks that their Keccak-256 is the block's "hash": a
// node cannot change a block's time without changing its hash. A mismatch
// is an error wrapping ErrHeaderHash, an answer that is not a header one
// wrapping ErrMalformed.
func DecodeEVMHeader(raw json.RawMessage) (EVMHeader, error) {
	var j evmHeaderJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return EVMHeader{}, fmt.Errorf("%w: the block header does not decode: %v", ErrMalformed, err)
	}
	enc, err := j.rlp()
	if err != nil {
		return EVMHeader{}, err
	}
	h := EVMHeader{Hash: *j.Hash, ParentHash: *j.ParentHash, Number: uint64(*j.Number), Time: uint64(*j.Timestamp)}
	if got := keccak256(enc); got != h.Hash {
		return EVMHeader{}, fmt.Errorf("block %d: %w: it hashes to %s, the node states %s", h.Number, ErrHeaderHash, hex0x(got[:]), hex0x(h.Hash[:]))
	}
	return h, nil
}

// rlp is the header's consensus encoding, as go-ethereum's types.Header
// encodes it.
func (j *evmHeaderJSON) rlp() ([]byte, error) {
	if err := evmRequire("block header", evmField{"hash", j.Hash != nil}, evmField{"parentHash", j.ParentHash != nil},
		evmField{"sha3Uncles", j.UncleHash != nil}, evmField{"miner", j.Miner != nil}, evmField{"stateRoot", j.StateRoot != nil},
		evmField{"transactionsRoot", j.TransactionsRoot != nil}, evmField{"receiptsRoot", j.ReceiptsRoot != nil},
		evmField{"logsBloom", j.LogsBloom != nil}, evmField{"difficulty", j.Difficulty != nil}, evmField{"number", j.Number != nil},
		evmField{"gasLimit", j.GasLimit != nil}, evmField{"gasUsed", j.GasUsed != nil}, evmField{"timestamp", j.Timestamp != nil},
		evmField{"extraData", j.ExtraData != nil}, evmField{"mixHash", j.MixHash != nil}, evmField{"nonce", j.Nonce != nil}); err != nil {
		return nil, err
	}
	if len(*j.LogsBloom) != 256 || len(*j.Nonce) != 8 {
		return nil, fmt.Errorf("%w: the block header's logsBloom (%d bytes) or nonce (%d bytes) is not 256 and 8 bytes long", ErrMalformed, len(*j.LogsBloom), len(*j.Nonce))
	}
	items := [][]byte{
		rlpString(j.ParentHash[:]), rlpString(j.UncleHash[:]), rlpString(j.Miner[:]), rlpString(j.StateRoot[:]),
		rlpString(j.TransactionsRoot[:]), rlpString(j.ReceiptsRoot[:]), rlpString(*j.LogsBloom), rlpInt(*j.Difficulty),
		rlpUint(uint64(*j.Number)), rlpUint(uint64(*j.GasLimit)), rlpUint(uint64(*j.GasUsed)), rlpUint(uint64(*j.Timestamp)),
		rlpString(*j.ExtraData), rlpString(j.MixHash[:]), rlpString(*j.Nonce),
	}
	forks, err := j.forkFields()
	if err != nil {
		return nil, err
	}
	return rlpList(append(items, forks...)...), nil
}

// forkFields encodes the fork fields present. Each fork keeps the fields
// of the forks before it, so a field present after one absent is refused.
func (j *evmHeaderJSON) forkFields() ([][]byte, error) {
	opt := []struct {
		name string
		enc  []byte // nil when absent
	}{
		{"baseFeePerGas", rlpIfPresent(j.BaseFeePerGas, func(q evmQuantity) []byte { return rlpInt(q) })},
		{"withdrawalsRoot", rlpIfPresent(j.WithdrawalsRoot, func(w evmWord) []byte { return rlpString(w[:]) })},
		{"blobGasUsed", rlpIfPresent(j.BlobGasUsed, func(u evmUint) []byte { return rlpUint(uint64(u)) })},
		{"excessBlobGas", rlpIfPresent(j.ExcessBlobGas, func(u evmUint) []byte { return rlpUint(uint64(u)) })},
		{"parentBeaconBlockRoot", rlpIfPresent(j.ParentBeaconBlockRoot, func(w evmWord) []byte { return rlpString(w[:]) })},
		{"requestsHash", rlpIfPresent(j.RequestsHash, func(w evmWord) []byte { return rlpString(w[:]) })},
		{"blockAccessListHash", rlpIfPresent(j.BlockAccessListHash, func(w evmWord) []byte { return rlpString(w[:]) })},
		{"slotNumber", rlpIfPresent(j.SlotNumber, func(u evmUint) []byte { return rlpUint(uint64(u)) })},
	}
	var out [][]byte
	for i, f := range opt {
		if f.enc == nil {
			for _, later := range opt[i+1:] {
				if later.enc != nil {
					return nil, fmt.Errorf("%w: the block header has %s but not %s", ErrMalformed, later.name, f.name)
				}
			}
			break
		}
		out = append(out, f.enc)
	}
	return out, nil
}

func rlpIfPresent[T any](v *T, enc func(T) []byte) []byte {
	if v == nil {
		return nil
	}
	return enc(*v)
}
