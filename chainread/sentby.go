package chainread

import (
	"bytes"
	"fmt"
)

// SentBy says why t, read under signature sig, is not a transaction payer
// (base58) sent (nil when it is): payer must be its fee payer, a required
// signer, and sig its first signature (DecodeSolanaTransaction verified
// every signature). Anyone can send an account a transaction with a keeper
// memo; only the account's own count (docs/log.md, Trust).
func (t SolanaTransaction) SentBy(sig [64]byte, payer string) error {
	if len(t.AccountKeys) == 0 || t.NumRequiredSignatures == 0 || t.FeePayer() != payer {
		return fmt.Errorf("was not paid by the anchoring account %s", payer)
	}
	if len(t.Signatures) == 0 || !bytes.Equal(t.Signatures[0][:], sig[:]) {
		return fmt.Errorf("the node answered with another transaction than %s", Base58Encode(sig[:]))
	}
	return nil
}
