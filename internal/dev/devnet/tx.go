package devnet

import (
	"crypto/ed25519"
	"encoding/base64"
	"fmt"

	bin "github.com/gagliardetto/binary"
	"github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"
)

// Wire limits (PACKET_DATA_SIZE and the encoded sizes the RPC derives from it).
const (
	packetDataSize     = 1232
	maxBase58TxLen     = 1683
	maxBase64TxLen     = 1644
	versionedTxTypeStr = "solana_transaction::versioned::VersionedTransaction"
)

// parsedTx is a decoded, sanitized transaction.
type parsedTx struct {
	tx       *solana.Transaction
	raw      []byte
	sig      solana.Signature // the transaction id: first signature
	keys     []solana.PublicKey
	signer   []bool
	writable []bool
	v0       bool
	sigsOK   bool // every signature verifies against the serialized message
}

// decodeWire decodes an encoded transaction the way sendTransaction and
// simulateTransaction do, including their size limits and error texts.
func decodeWire(data, encoding string) ([]byte, *rpcError) {
	var raw []byte
	switch encoding {
	case "", "base58":
		if len(data) > maxBase58TxLen {
			return nil, invalidParams("base58 encoded %s too large: %d bytes (max: encoded/raw %d/%d)",
				versionedTxTypeStr, len(data), maxBase58TxLen, packetDataSize)
		}
		b, err := base58.Decode(data)
		if err != nil {
			return nil, invalidParams("invalid base58 encoding: %v", err)
		}
		raw = b
	case "base64":
		if len(data) > maxBase64TxLen {
			return nil, invalidParams("base64 encoded %s too large: %d bytes (max: encoded/raw %d/%d)",
				versionedTxTypeStr, len(data), maxBase64TxLen, packetDataSize)
		}
		b, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			return nil, invalidParams("invalid base64 encoding: %v", err)
		}
		raw = b
	default:
		return nil, invalidParams("unsupported encoding: %s. Supported encodings: base58, base64", encoding)
	}
	if len(raw) > packetDataSize {
		return nil, invalidParams("decoded %s too large: %d bytes (max: %d bytes)", versionedTxTypeStr, len(raw), packetDataSize)
	}
	return raw, nil
}

// parseTx deserializes and sanitizes a wire transaction.
func parseTx(raw []byte) (*parsedTx, *rpcError) {
	tx := new(solana.Transaction)
	if err := tx.UnmarshalWithDecoder(bin.NewBinDecoder(raw)); err != nil {
		return nil, invalidParams("failed to deserialize %s: %v", versionedTxTypeStr, err)
	}
	if tx.Message.IsVersioned() && tx.Message.GetVersion() != solana.MessageVersionV0 {
		return nil, invalidParams("failed to deserialize %s: unsupported message version", versionedTxTypeStr)
	}
	if terr := sanitize(tx); terr != nil {
		return nil, invalidParams("invalid transaction: %s", terr)
	}
	if tx.Message.IsVersioned() && len(tx.Message.AddressTableLookups) > 0 {
		// The devnet has no address lookup table accounts.
		return nil, invalidParams("invalid transaction: %s", newTxError("AddressLookupTableNotFound"))
	}
	m := &tx.Message
	n := len(m.AccountKeys)
	p := &parsedTx{
		tx:       tx,
		raw:      raw,
		sig:      tx.Signatures[0],
		keys:     m.AccountKeys,
		signer:   make([]bool, n),
		writable: make([]bool, n),
		v0:       m.IsVersioned(),
	}
	numSig := int(m.Header.NumRequiredSignatures)
	roSig := int(m.Header.NumReadonlySignedAccounts)
	roUnsig := int(m.Header.NumReadonlyUnsignedAccounts)
	invoked := map[uint16]bool{}
	for _, ix := range m.Instructions {
		invoked[ix.ProgramIDIndex] = true
	}
	for i := range n {
		p.signer[i] = i < numSig
		if i < numSig {
			p.writable[i] = i < numSig-roSig
		} else {
			p.writable[i] = i < n-roUnsig
		}
		// The runtime demotes program ids and builtin programs to read-only.
		if _, isProgram := builtinProgramState[m.AccountKeys[i]]; isProgram || invoked[uint16(i)] {
			p.writable[i] = false
		}
	}
	msg, err := m.MarshalBinary()
	if err != nil {
		return nil, invalidParams("failed to deserialize %s: %v", versionedTxTypeStr, err)
	}
	p.sigsOK = true
	for i, sig := range tx.Signatures {
		if !ed25519.Verify(ed25519.PublicKey(m.AccountKeys[i][:]), msg, sig[:]) {
			p.sigsOK = false
			break
		}
	}
	return p, nil
}

// sanitize applies the structural checks of Message::sanitize.
func sanitize(tx *solana.Transaction) *txError {
	m := &tx.Message
	h := m.Header
	n := len(m.AccountKeys)
	fail := newTxError("SanitizeFailure")
	if int(h.NumRequiredSignatures) != len(tx.Signatures) || h.NumRequiredSignatures == 0 {
		return fail
	}
	if h.NumReadonlySignedAccounts >= h.NumRequiredSignatures {
		return fail // the fee payer must be writable
	}
	if int(h.NumRequiredSignatures)+int(h.NumReadonlyUnsignedAccounts) > n || n > 256 {
		return fail
	}
	for _, ix := range m.Instructions {
		if ix.ProgramIDIndex == 0 || int(ix.ProgramIDIndex) >= n {
			return fail
		}
		for _, a := range ix.Accounts {
			if int(a) >= n {
				return fail
			}
		}
	}
	seen := make(map[solana.PublicKey]bool, n)
	for _, k := range m.AccountKeys {
		if seen[k] {
			return newTxError("AccountLoadedTwice")
		}
		seen[k] = true
	}
	return nil
}

// budget is what the ComputeBudget instructions of a transaction ask for.
type budget struct {
	limit uint64 // compute unit limit
	price uint64 // micro-lamports per compute unit
}

// parseBudget applies process_compute_budget_instructions.
func parseBudget(m *solana.Message) (budget, *txError) {
	var (
		b                                   budget
		hasLimit, hasPrice, hasHeap, hasLdl bool
		others                              uint64
	)
	dup := func(i int, seen *bool) *txError {
		if *seen {
			return &txError{kind: "DuplicateInstruction", index: i}
		}
		*seen = true
		return nil
	}
	for i, ix := range m.Instructions {
		if m.AccountKeys[ix.ProgramIDIndex] != solana.ComputeBudget {
			others++
			continue
		}
		d := []byte(ix.Data)
		bad := instructionError(i, "InvalidInstructionData")
		if len(d) == 0 {
			return b, bad
		}
		switch d[0] {
		case 1: // RequestHeapFrame(u32)
			if len(d) != 5 {
				return b, bad
			}
			if e := dup(i, &hasHeap); e != nil {
				return b, e
			}
			sz := leU32(d[1:])
			if sz < 32*1024 || sz > 256*1024 || sz%1024 != 0 {
				return b, bad
			}
		case 2: // SetComputeUnitLimit(u32)
			if len(d) != 5 {
				return b, bad
			}
			if e := dup(i, &hasLimit); e != nil {
				return b, e
			}
			b.limit = uint64(leU32(d[1:]))
		case 3: // SetComputeUnitPrice(u64)
			if len(d) != 9 {
				return b, bad
			}
			if e := dup(i, &hasPrice); e != nil {
				return b, e
			}
			b.price = leU64(d[1:])
		case 4: // SetLoadedAccountsDataSizeLimit(u32)
			if len(d) != 5 {
				return b, bad
			}
			if e := dup(i, &hasLdl); e != nil {
				return b, e
			}
		default: // 0 = RequestUnitsDeprecated is no longer accepted
			return b, bad
		}
	}
	if !hasLimit {
		b.limit = others * defaultInstructionCULimit
	}
	b.limit = min(b.limit, maxComputeUnitLimit)
	return b, nil
}

// fee is the transaction fee: 5000 lamports per signature plus the priority
// fee, ceil(price × limit / 1e6).
func (b budget) fee(numSignatures int) uint64 {
	prio := (b.price*b.limit + 999_999) / 1_000_000
	if b.limit != 0 && b.price > (^uint64(0))/b.limit { // overflow: u128 in the real runtime
		prio = ^uint64(0)
	}
	return satAdd(uint64(numSignatures)*lamportsPerSignature, prio)
}

func leU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

func leU64(b []byte) uint64 {
	return uint64(leU32(b)) | uint64(leU32(b[4:]))<<32
}

func (p *parsedTx) String() string { return fmt.Sprintf("tx %s", p.sig) }
