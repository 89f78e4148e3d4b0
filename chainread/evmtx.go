package chainread

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/decred/dcrd/dcrec/secp256k1/v4"
	"github.com/decred/dcrd/dcrec/secp256k1/v4/ecdsa"
)

// EVMTransaction is a signed EVM transaction rebuilt from a node's JSON and
// rehashed.
type EVMTransaction struct {
	Hash    [32]byte
	Type    uint8 // 0 legacy (EIP-155), 1 EIP-2930, 2 EIP-1559
	ChainID uint64
	Nonce   uint64
	To      *[20]byte // nil for a contract creation
	Data    []byte    // calldata, exact bytes
	Sender  [20]byte  // recovered from the signature
}

// evmTxJSON is a transaction as eth_getTransactionByHash answers it. Only
// the fields the signed encoding holds are read; a node's additions
// (blockHash, from, …) are ignored, the sender being recovered instead.
type evmTxJSON struct {
	Type                 *evmUint          `json:"type"`
	ChainID              *evmQuantity      `json:"chainId"`
	Nonce                *evmUint          `json:"nonce"`
	To                   *evmAddr          `json:"to"`
	Gas                  *evmUint          `json:"gas"`
	GasPrice             *evmQuantity      `json:"gasPrice"`
	MaxPriorityFeePerGas *evmQuantity      `json:"maxPriorityFeePerGas"`
	MaxFeePerGas         *evmQuantity      `json:"maxFeePerGas"`
	Value                *evmQuantity      `json:"value"`
	Input                *evmBytes         `json:"input"`
	AccessList           *[]evmAccessTuple `json:"accessList"`
	V                    *evmQuantity      `json:"v"`
	R                    *evmQuantity      `json:"r"`
	S                    *evmQuantity      `json:"s"`
	YParity              *evmUint          `json:"yParity"`
}

type evmAccessTuple struct {
	Address     *evmAddr   `json:"address"`
	StorageKeys *[]evmWord `json:"storageKeys"`
}

// evmSigned is a transaction's encoding and what its signature commits to.
type evmSigned struct {
	encoding []byte      // as hashed: RLP, or the EIP-2718 envelope
	sighash  [32]byte    // what was signed
	v        evmQuantity // as the transaction states it
	chainID  evmQuantity // the chain the signature is for, unless unprotected
	// unprotected: a legacy transaction signed without EIP-155 (v = 27 or
	// 28), valid on every chain.
	unprotected bool
	recID       byte // the public key recovery id, 0 or 1
	r, s        evmQuantity
}

// DecodeEVMTransaction rebuilds the signed transaction from a node's JSON
// object (as eth_getTransactionByHash answers it, or one element of a full
// block's "transactions"), encodes it (RLP; typed transactions as EIP-2718
// envelopes) and checks it: it hashes (Keccak-256 of the encoding) to want,
// unless want is zero; it is replay-protected (a legacy transaction without
// EIP-155, v = 27 or 28, is refused); it is signed for chainID (EIP-155's v
// for a legacy transaction, the chainId field for a typed one); s is in the
// lower half of the curve order (EIP-2). The sender is then recovered from
// the signature. Transaction types other than 0, 1 and 2 are refused.
//
// An answer that is not a transaction or does not hash to want is an error
// wrapping ErrMalformed; a transaction that breaks a rule is a plain error
// naming the rule.
func DecodeEVMTransaction(raw json.RawMessage, want [32]byte, chainID uint64) (EVMTransaction, error) {
	var j evmTxJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		return EVMTransaction{}, fmt.Errorf("%w: the transaction does not decode: %v", ErrMalformed, err)
	}
	var typ uint64
	if j.Type != nil {
		typ = uint64(*j.Type)
	}
	var (
		sig evmSigned
		err error
	)
	switch typ {
	case 0:
		sig, err = j.legacy()
	case 1, 2:
		sig, err = j.typed(byte(typ))
	default:
		return EVMTransaction{}, fmt.Errorf("transaction type %d is not one keeper reads (0 legacy, 1 EIP-2930, 2 EIP-1559)", typ)
	}
	if err != nil {
		return EVMTransaction{}, err
	}
	tx := EVMTransaction{Hash: keccak256(sig.encoding), Type: byte(typ), Nonce: uint64(*j.Nonce), Data: *j.Input}
	if j.To != nil {
		to := [20]byte(*j.To)
		tx.To = &to
	}
	// The sender is recovered from the transaction the node returned, so it
	// must be the one asked for: a node could otherwise answer with another
	// transaction the same account signed.
	if want != ([32]byte{}) && tx.Hash != want {
		return EVMTransaction{}, fmt.Errorf("%w: the transaction the node returned for %s hashes to %s", ErrMalformed, hex0x(want[:]), hex0x(tx.Hash[:]))
	}
	if sig.unprotected {
		return EVMTransaction{}, fmt.Errorf("unprotected legacy transaction (v=%s) signs for no chain", evmDecimal(sig.v))
	}
	signedFor, ok := sig.chainID.uint64()
	if !ok || signedFor != chainID {
		return EVMTransaction{}, fmt.Errorf("signed for chain id %s, the network's is %d", evmDecimal(sig.chainID), chainID)
	}
	tx.ChainID = signedFor
	if tx.Sender, err = recoverSender(sig); err != nil {
		return EVMTransaction{}, err
	}
	return tx, nil
}

// legacy encodes a type 0 transaction: RLP of its nine fields, signed as
// EIP-155 says (its first six fields, the chain id, 0, 0).
func (j *evmTxJSON) legacy() (evmSigned, error) {
	if err := evmRequire("transaction", evmField{"nonce", j.Nonce != nil}, evmField{"gasPrice", j.GasPrice != nil}, evmField{"gas", j.Gas != nil},
		evmField{"value", j.Value != nil}, evmField{"input", j.Input != nil}, evmField{"v", j.V != nil}, evmField{"r", j.R != nil}, evmField{"s", j.S != nil}); err != nil {
		return evmSigned{}, err
	}
	fields := [][]byte{rlpUint(uint64(*j.Nonce)), rlpInt(*j.GasPrice), rlpUint(uint64(*j.Gas)), j.rlpTo(), rlpInt(*j.Value), rlpString(*j.Input)}
	sig := evmSigned{v: *j.V, r: *j.R, s: *j.S}
	sig.encoding = rlpList(append(fields, rlpInt(sig.v), rlpInt(sig.r), rlpInt(sig.s))...)
	v := new(big.Int).SetBytes(sig.v)
	switch {
	case v.Cmp(big.NewInt(35)) >= 0:
		// v = chainID·2 + 35 + recovery id.
		v.Sub(v, big.NewInt(35))
		sig.recID = byte(v.Bit(0))
		sig.chainID = rlpTrimZeros(v.Rsh(v, 1).Bytes())
		if j.ChainID != nil && !bytes.Equal(*j.ChainID, sig.chainID) {
			return evmSigned{}, fmt.Errorf("%w: the transaction states chain id %s, its v says %s", ErrMalformed, evmDecimal(*j.ChainID), evmDecimal(sig.chainID))
		}
		sig.sighash = keccak256(rlpList(append(fields, rlpInt(sig.chainID), rlpUint(0), rlpUint(0))...))
	case v.Cmp(big.NewInt(27)) == 0 || v.Cmp(big.NewInt(28)) == 0:
		sig.unprotected = true // refused once the hash is checked
	default:
		return evmSigned{}, fmt.Errorf("legacy transaction with v=%s: neither EIP-155 (v ≥ 35) nor unprotected (27, 28)", v)
	}
	return sig, nil
}

// typed encodes an EIP-2930 (1) or EIP-1559 (2) transaction as its
// EIP-2718 envelope: the type byte, then RLP of its fields; the signature
// is over the same without v, r, s.
func (j *evmTxJSON) typed(typ byte) (evmSigned, error) {
	if err := evmRequire("transaction", evmField{"chainId", j.ChainID != nil}, evmField{"nonce", j.Nonce != nil}, evmField{"gas", j.Gas != nil},
		evmField{"value", j.Value != nil}, evmField{"input", j.Input != nil}, evmField{"r", j.R != nil}, evmField{"s", j.S != nil}); err != nil {
		return evmSigned{}, err
	}
	fields := [][]byte{rlpInt(*j.ChainID), rlpUint(uint64(*j.Nonce))}
	if typ == 1 {
		if err := evmRequire("transaction", evmField{"gasPrice", j.GasPrice != nil}); err != nil {
			return evmSigned{}, err
		}
		fields = append(fields, rlpInt(*j.GasPrice))
	} else {
		if err := evmRequire("transaction", evmField{"maxPriorityFeePerGas", j.MaxPriorityFeePerGas != nil}, evmField{"maxFeePerGas", j.MaxFeePerGas != nil}); err != nil {
			return evmSigned{}, err
		}
		fields = append(fields, rlpInt(*j.MaxPriorityFeePerGas), rlpInt(*j.MaxFeePerGas))
	}
	acl, err := j.rlpAccessList()
	if err != nil {
		return evmSigned{}, err
	}
	fields = append(fields, rlpUint(uint64(*j.Gas)), j.rlpTo(), rlpInt(*j.Value), rlpString(*j.Input), acl)

	sig := evmSigned{chainID: *j.ChainID, r: *j.R, s: *j.S}
	// The parity may be in v, in yParity or in both, which must then agree.
	switch {
	case j.YParity != nil && j.V != nil && !bytes.Equal(*j.V, rlpIntBytes(uint64(*j.YParity))):
		return evmSigned{}, fmt.Errorf("%w: the transaction states v=%s and yParity=%d", ErrMalformed, evmDecimal(*j.V), *j.YParity)
	case j.YParity != nil:
		sig.v = rlpIntBytes(uint64(*j.YParity))
	case j.V != nil:
		sig.v = *j.V
	default:
		return evmSigned{}, fmt.Errorf("%w: the transaction has neither v nor yParity", ErrMalformed)
	}
	if len(sig.v) > 1 || (len(sig.v) == 1 && sig.v[0] != 1) {
		return evmSigned{}, fmt.Errorf("type %d transaction with y parity %s: neither 0 nor 1", typ, evmDecimal(sig.v))
	}
	if len(sig.v) == 1 {
		sig.recID = 1
	}
	sig.encoding = append([]byte{typ}, rlpList(append(fields, rlpInt(sig.v), rlpInt(sig.r), rlpInt(sig.s))...)...)
	sig.sighash = keccak256([]byte{typ}, rlpList(fields...))
	return sig, nil
}

// evmField is a JSON field an answer must have, and whether it has it.
type evmField struct {
	name    string
	present bool
}

// evmRequire is an error naming the first field the answer (what) lacks.
func evmRequire(what string, fs ...evmField) error {
	for _, f := range fs {
		if !f.present {
			return fmt.Errorf("%w: the %s lacks %s", ErrMalformed, what, f.name)
		}
	}
	return nil
}

// rlpTo is the recipient, or the empty string for a contract creation.
func (j *evmTxJSON) rlpTo() []byte {
	if j.To == nil {
		return rlpString(nil)
	}
	return rlpString(j.To[:])
}

// rlpAccessList is the EIP-2930 access list (empty when absent, as
// go-ethereum reads it): a list of [address, [storage key, …]].
func (j *evmTxJSON) rlpAccessList() ([]byte, error) {
	var tuples [][]byte
	if j.AccessList != nil {
		for _, t := range *j.AccessList {
			if t.Address == nil || t.StorageKeys == nil {
				return nil, fmt.Errorf("%w: an access list entry lacks its address or storageKeys", ErrMalformed)
			}
			keys := make([][]byte, len(*t.StorageKeys))
			for i, k := range *t.StorageKeys {
				keys[i] = rlpString(k[:])
			}
			tuples = append(tuples, rlpList(rlpString(t.Address[:]), rlpList(keys...)))
		}
	}
	return rlpList(tuples...), nil
}

// recoverSender checks that sig is a canonical (EIP-2) secp256k1 signature
// and recovers the address that made it.
func recoverSender(sig evmSigned) ([20]byte, error) {
	var r, s secp256k1.ModNScalar
	if len(sig.r) > 32 || r.SetByteSlice(sig.r) || r.IsZero() || len(sig.s) > 32 || s.SetByteSlice(sig.s) || s.IsZero() {
		return [20]byte{}, fmt.Errorf("signature r=%s s=%s is out of range", sig.r, sig.s)
	}
	if s.IsOverHalfOrder() {
		return [20]byte{}, fmt.Errorf("signature s=%s is in the upper half of the curve order, which EIP-2 forbids", sig.s)
	}
	// RecoverCompact's format: 27 + recovery id, then r and s, 32 bytes each.
	compact := make([]byte, 65)
	compact[0] = 27 + sig.recID
	r.PutBytesUnchecked(compact[1:33])
	s.PutBytesUnchecked(compact[33:65])
	pub, _, err := ecdsa.RecoverCompact(compact, sig.sighash[:])
	if err != nil {
		return [20]byte{}, fmt.Errorf("cannot recover the sender: %w", err)
	}
	h := keccak256(pub.SerializeUncompressed()[1:])
	return [20]byte(h[12:]), nil
}

// rlpIntBytes is x big-endian without leading zeros.
func rlpIntBytes(x uint64) []byte { return rlpTrimZeros(rlpBigEndian(x)) }

func evmDecimal(q []byte) string { return new(big.Int).SetBytes(q).String() }
