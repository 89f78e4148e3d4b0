package chainread

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"fmt"
	"strings"
)

// SolanaMemoProgramID is the SPL Memo program, whose instructions carry
// Solana anchors: SolanaMemoProgram spelled as its 32 bytes.
var SolanaMemoProgramID = func() [32]byte {
	b, err := base58Fixed(SolanaMemoProgram, 32)
	if err != nil {
		panic(err)
	}
	return [32]byte(b)
}()

// SolanaMemoProgram is the SPL Memo program's address.
const SolanaMemoProgram = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr"

// SolanaSignature reads a Solana transaction reference: the base58 of its
// first signature (64 bytes), optionally prefixed "solana:" as receipts
// spell it, surrounding space ignored.
func SolanaSignature(ref string) ([64]byte, error) {
	s := strings.TrimPrefix(strings.TrimSpace(ref), "solana:")
	b, err := base58Fixed(s, 64)
	if err != nil {
		return [64]byte{}, fmt.Errorf("solana: %q is not a transaction signature: %w", ref, err)
	}
	return [64]byte(b), nil
}

// SolanaTransaction is a Solana transaction decoded from its wire bytes,
// every signature verified over its message.
type SolanaTransaction struct {
	Signatures            [][64]byte
	Version               int // -1 legacy, 0 for v0
	NumRequiredSignatures uint8
	NumReadonlySigned     uint8
	NumReadonlyUnsigned   uint8
	AccountKeys           [][32]byte // the static keys; the signers first
	RecentBlockhash       [32]byte
	Instructions          []SolanaInstruction
	AddressTableLookups   []SolanaAddressTableLookup // v0 only
	Message               []byte                     // the bytes the signatures sign
}

// SolanaInstruction is one compiled instruction: its program and accounts
// as indexes into the transaction's keys (static, then looked up), its
// data exact.
type SolanaInstruction struct {
	ProgramIDIndex uint8
	Accounts       []uint8
	Data           []byte
}

// SolanaAddressTableLookup names the keys a v0 transaction loads from an
// address lookup table. Their addresses are on chain, not in the
// transaction, so no instruction's program can be one (Solana's rule).
type SolanaAddressTableLookup struct {
	AccountKey      [32]byte
	WritableIndexes []uint8
	ReadonlyIndexes []uint8
}

// DecodeSolanaTransaction decodes a transaction's wire bytes: the
// signatures (compact-u16 count), then a legacy or v0 message. It refuses,
// wrapping ErrMalformed, bytes that do not decode or are left over, a
// message Solana would not sanitize (as many signatures as the header
// requires, a writable signing fee payer, indexes in range, no program
// that is the fee payer) and any signature that does not verify.
func DecodeSolanaTransaction(wire []byte) (SolanaTransaction, error) {
	t, err := decodeSolanaTransaction(bytes.Clone(wire))
	if err != nil {
		return SolanaTransaction{}, fmt.Errorf("solana transaction: %w: %w", ErrMalformed, err)
	}
	return t, nil
}

func decodeSolanaTransaction(wire []byte) (SolanaTransaction, error) {
	var t SolanaTransaction
	r := &solReader{b: wire}
	n := r.compactU16()
	for i := 0; i < n && r.err == nil; i++ {
		t.Signatures = append(t.Signatures, [64]byte(r.take(64)))
	}
	if r.err != nil {
		return t, r.err
	}
	msgStart := r.off
	if err := t.decodeMessage(r); err != nil {
		return t, err
	}
	if r.off != len(wire) {
		return t, fmt.Errorf("%d trailing bytes", len(wire)-r.off)
	}
	t.Message = wire[msgStart:]
	if err := t.sanitize(); err != nil {
		return t, err
	}
	for i, sig := range t.Signatures {
		if !ed25519.Verify(t.AccountKeys[i][:], t.Message, sig[:]) {
			return t, fmt.Errorf("signature %d (%s) does not verify", i, Base58Encode(sig[:]))
		}
	}
	return t, nil
}

func (t *SolanaTransaction) decodeMessage(r *solReader) error {
	t.Version = -1
	if first := r.peek(); first&0x80 != 0 {
		r.take(1)
		if v := first & 0x7f; v != 0 {
			return fmt.Errorf("message version %d is not supported", v)
		}
		t.Version = 0
	}
	h := r.take(3)
	if r.err != nil {
		return r.err
	}
	t.NumRequiredSignatures, t.NumReadonlySigned, t.NumReadonlyUnsigned = h[0], h[1], h[2]
	n := r.compactU16()
	for i := 0; i < n && r.err == nil; i++ {
		t.AccountKeys = append(t.AccountKeys, [32]byte(r.take(32)))
	}
	t.RecentBlockhash = [32]byte(r.take(32))
	n = r.compactU16()
	for i := 0; i < n && r.err == nil; i++ {
		var ix SolanaInstruction
		ix.ProgramIDIndex = r.take(1)[0]
		ix.Accounts = r.take(r.compactU16())
		ix.Data = r.take(r.compactU16())
		t.Instructions = append(t.Instructions, ix)
	}
	if t.Version == 0 {
		n = r.compactU16()
		for i := 0; i < n && r.err == nil; i++ {
			var l SolanaAddressTableLookup
			l.AccountKey = [32]byte(r.take(32))
			l.WritableIndexes = r.take(r.compactU16())
			l.ReadonlyIndexes = r.take(r.compactU16())
			t.AddressTableLookups = append(t.AddressTableLookups, l)
		}
	}
	return r.err
}

// sanitize applies Solana's own checks of a transaction (its Sanitize),
// but for one: an instruction whose program index points at a looked-up
// key is kept, and is simply not the memo program.
func (t *SolanaTransaction) sanitize() error {
	static := len(t.AccountKeys)
	switch {
	case t.NumRequiredSignatures == 0:
		return errors.New("the fee payer does not sign")
	case len(t.Signatures) != int(t.NumRequiredSignatures):
		return fmt.Errorf("%d signatures, and the message requires %d", len(t.Signatures), t.NumRequiredSignatures)
	case t.NumReadonlySigned >= t.NumRequiredSignatures:
		return errors.New("no writable signer to pay the fee")
	case int(t.NumRequiredSignatures)+int(t.NumReadonlyUnsigned) > static:
		return fmt.Errorf("the header counts more accounts than the %d keys", static)
	}
	total := static
	for i, l := range t.AddressTableLookups {
		if len(l.WritableIndexes)+len(l.ReadonlyIndexes) == 0 {
			return fmt.Errorf("address table lookup %d loads no key", i)
		}
		total += len(l.WritableIndexes) + len(l.ReadonlyIndexes)
	}
	if total > 256 {
		return fmt.Errorf("%d account keys, more than 256", total)
	}
	for i, ix := range t.Instructions {
		if ix.ProgramIDIndex == 0 || int(ix.ProgramIDIndex) >= total {
			return fmt.Errorf("instruction %d: program index %d out of range", i, ix.ProgramIDIndex)
		}
		for _, a := range ix.Accounts {
			if int(a) >= total {
				return fmt.Errorf("instruction %d: account index %d out of range", i, a)
			}
		}
	}
	return nil
}

// FeePayer is the base58 address of the account that signed first and
// paid the fee ("" for a transaction that was not decoded).
func (t SolanaTransaction) FeePayer() string {
	if len(t.AccountKeys) == 0 {
		return ""
	}
	return Base58Encode(t.AccountKeys[0][:])
}

// Memos are the exact data bytes of every instruction whose program is the
// SPL Memo program, in instruction order: no text decoding, no trimming.
func (t SolanaTransaction) Memos() [][]byte {
	var out [][]byte
	for _, ix := range t.Instructions {
		if int(ix.ProgramIDIndex) < len(t.AccountKeys) && t.AccountKeys[ix.ProgramIDIndex] == SolanaMemoProgramID {
			out = append(out, ix.Data)
		}
	}
	return out
}

// solReader reads Solana's wire format. Its first error sticks; after it,
// reads return zeros.
type solReader struct {
	b   []byte
	off int
	err error
}

func (r *solReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf(format, args...)
	}
}

// take returns the next n bytes (zeros once an error stuck).
func (r *solReader) take(n int) []byte {
	if r.err == nil && len(r.b)-r.off < n {
		r.fail("truncated at byte %d (%d more wanted)", r.off, n)
	}
	if r.err != nil {
		return make([]byte, n)
	}
	out := r.b[r.off : r.off+n : r.off+n]
	r.off += n
	return out
}

func (r *solReader) peek() byte {
	if r.err != nil || r.off >= len(r.b) {
		return 0
	}
	return r.b[r.off]
}

// compactU16 reads Solana's short vector length: 7 bits a byte, low
// first, at most 3 bytes, in its one shortest form.
func (r *solReader) compactU16() int {
	at := r.off
	v := 0
	for i := range 3 {
		b := int(r.take(1)[0])
		if r.err != nil {
			return 0
		}
		if i > 0 && b == 0 {
			r.fail("compact-u16 at byte %d is not in its shortest form", at)
			return 0
		}
		if i == 2 && b > 3 {
			r.fail("compact-u16 at byte %d overflows", at)
			return 0
		}
		v |= (b & 0x7f) << (7 * i)
		if b&0x80 == 0 {
			return v
		}
	}
	r.fail("compact-u16 at byte %d overflows", at)
	return 0
}
