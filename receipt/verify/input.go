package verify

import (
	"context"
	"crypto/subtle"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/receipt"
)

// Input is what a verifier is handed as files: the receipt, the trust it
// pins, and the original file's hash. Verify reads them by the one
// definition every keeper verifier shares (conformance/README.md), so the
// CLI, the /verify page and other programs cannot read one file two ways.
type Input struct {
	Receipt []byte // the receipt file: JSON, or a .tlog-proof
	// Trust is the pinned trust root: JSON, or a signed note as /log/trust
	// serves it (nil: none; LogKey and Accounts may pin the short form).
	Trust []byte
	// TrustUpdate is a newer root offered to a verifier that pinned Trust:
	// taken only if it extends Trust (trust.Extends), as TUF's clients take
	// a new root only if it follows the one they hold.
	TrustUpdate []byte
	// LogKey and Accounts are the short form of a trust root
	// (Options.LogKey, Options.Accounts).
	LogKey   string
	Accounts []string
	// FileSHA256 is the original file's SHA-256 in hex ("": no file given).
	FileSHA256 string
}

// Verify reads in's receipt and trust strictly and checks the receipt with
// o (whose Trust, LogKey and Accounts it replaces). A receipt that does not
// parse fails CheckFormat, a root that does not (or an update that does
// not extend it) CheckTrust, a file that does not hash to the digest
// CheckDigest: the Report then has no Results.
func Verify(ctx context.Context, in Input, o Options) Report {
	r, err := ReadReceipt(in.Receipt)
	if err != nil {
		return refused(CheckFormat, err)
	}
	o.Trust, o.LogKey, o.Accounts = nil, in.LogKey, in.Accounts
	if len(in.Trust) > 0 {
		root, err := ReadTrust(in.Trust, in.TrustUpdate, in.LogKey)
		if err != nil {
			return refused(CheckTrust, err)
		}
		o.Trust, o.Accounts = &root, nil
	} else if len(in.TrustUpdate) > 0 {
		return refused(CheckTrust, fmt.Errorf("a trust update is taken only over a pinned trust root"))
	}
	if in.FileSHA256 != "" {
		got, err := hex.DecodeString(strings.TrimSpace(in.FileSHA256))
		want, _ := hex.DecodeString(r.Digest) // Parse checked it
		if err != nil || subtle.ConstantTimeCompare(got, want) != 1 {
			return refused(CheckDigest, fmt.Errorf("the file hashes to %s, the receipt's digest is %s", in.FileSHA256, r.Digest))
		}
	}
	return Check(ctx, r, o)
}

func refused(check string, err error) Report {
	return Report{Check: check, Reason: err.Error(), Results: []Result{}, Networks: []string{}, Clocks: []string{}}
}

// ReadReceipt reads a receipt file, JSON or a .tlog-proof, strictly.
func ReadReceipt(raw []byte) (receipt.Receipt, error) {
	if receipt.IsTLogProof(raw) {
		return receipt.ParseTLogProof(raw)
	}
	return receipt.Parse(raw)
}

// ReadTrust reads a pinned trust root, JSON or a signed note (whose
// signature must verify under the key it names, or under logKey when the
// verifier pinned one separately), then update, when given, which must be
// signed by the same key and extend it. The root returned is the one to
// verify with.
func ReadTrust(pinned, update []byte, logKey string) (trust.Root, error) {
	var key *evlog.Key
	if logKey != "" {
		k, err := evlog.ParseKey(logKey)
		if err != nil {
			return trust.Root{}, fmt.Errorf("the pinned log key: %w", err)
		}
		key = &k
	}
	root, err := trust.Open(pinned, keyForNote(pinned, key))
	if err != nil && key != nil && trust.IsSigned(pinned) {
		if self, selfErr := trust.Open(pinned, nil); selfErr == nil && self.Log.Key != key.Text {
			return trust.Root{}, fmt.Errorf("the root's log key %s is not the pinned log key %s", self.Log.Key, key.Text)
		}
	}
	if err != nil {
		return trust.Root{}, err
	}
	if key != nil && root.Log.Key != key.Text {
		return trust.Root{}, fmt.Errorf("the pinned trust root's log key %s is not the pinned log key %s", root.Log.Key, key.Text)
	}
	if len(update) == 0 {
		return root, nil
	}
	k, err := root.Key()
	if err != nil {
		return trust.Root{}, err
	}
	next, err := trust.Open(update, keyForNote(update, &k))
	if err != nil {
		return trust.Root{}, fmt.Errorf("the trust update: %w", err)
	}
	if err := trust.Extends(root, next); err != nil {
		return trust.Root{}, fmt.Errorf("the trust update does not extend the pinned root: %w", err)
	}
	return next, nil
}

// keyForNote is key for a signed root, nil for a plain JSON one (which
// trust.Open refuses to check against a key).
func keyForNote(data []byte, key *evlog.Key) *evlog.Key {
	if trust.IsSigned(data) {
		return key
	}
	return nil
}
