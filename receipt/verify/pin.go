package verify

import (
	"fmt"

	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/receipt"
)

// pin is what a verification rests on: the trust root the verifier pinned,
// or (insecure) nothing, when the receipt's own key and accounts stand in.
type pin struct {
	root     *trust.Root
	insecure bool
}

// pin reads Options' trust: Trust, else the short form, else the receipt
// itself when InsecureTrustReceipt allows; else a CheckTrust failure.
func (o Options) pin() (pin, *failure) {
	switch {
	case o.Trust != nil:
		if err := o.Trust.Check(); err != nil {
			return pin{}, failed(CheckTrust, "the pinned trust root: %v", err)
		}
		if o.LogKey != "" && o.LogKey != o.Trust.Log.Key {
			return pin{}, failed(CheckTrust, "the pinned log key %s is not the pinned trust root's (%s)", o.LogKey, o.Trust.Log.Key)
		}
		return pin{root: o.Trust}, nil
	case o.LogKey != "":
		root, err := trust.ShortForm(o.LogKey, o.Accounts)
		if err != nil {
			return pin{}, failed(CheckTrust, "the pinned log key and accounts: %v", err)
		}
		return pin{root: &root}, nil
	case len(o.Accounts) > 0:
		// Accounts without a key pin a version 1 or 2 receipt, which
		// names no log; a version 3 receipt then fails CheckTrust.
		root := trust.Root{MediaType: trust.MediaType}
		for _, s := range o.Accounts {
			a, err := trust.ParseAccount(s)
			if err != nil {
				return pin{}, failed(CheckTrust, "the pinned accounts: %v", err)
			}
			root.Accounts = append(root.Accounts, a)
		}
		return pin{root: &root}, nil
	case o.InsecureTrustReceipt:
		return pin{insecure: true}, nil
	}
	return pin{}, failed(CheckTrust, "%s", NothingPinned)
}

// checkAccount checks the transaction's sender (recovered from its
// signature by the Lookup) against the anchor's account, which must name
// it, and against the pinned trust root, which must list it for the
// anchor's network and, for a checkpoint anchor, its tree size.
func checkAccount(a receipt.Anchor, got Tx, p pin) *failure {
	switch {
	case a.Account != "" && !trust.SameAddress(got.Sender, a.Account):
		return failed(CheckAccount, "transaction %s was sent by %s, the receipt's anchoring account is %s", a.TxRef, got.Sender, a.Account)
	case a.Account == "" && a.Kind == receipt.AnchorCheckpoint:
		return failed(CheckAccount, "the anchor names no account: anyone could have sent transaction %s", a.TxRef)
	case p.root == nil:
		return nil // InsecureTrustReceipt: the receipt's own account
	}
	size := int64(-1) // a batch root commits to no tree size: checkBatch judges it
	if a.Kind == receipt.AnchorCheckpoint {
		size = int64(a.TreeSize)
	}
	if ok, why := p.root.Allows(a.Chain, got.Network, got.Sender, size); !ok {
		return failed(CheckAccount, "transaction %s: %s", a.TxRef, why)
	}
	return nil
}

// describe says what a Report rests on, for its output.
func (p pin) describe() string {
	switch {
	case p.insecure:
		return "the receipt's own (INSECURE: nothing pinned)"
	case p.root.Log.Key == "":
		return "pinned anchoring accounts, no log key"
	case len(p.root.Accounts) == 0:
		return fmt.Sprintf("pinned log key %s, no anchoring account pinned", p.root.Log.Key)
	}
	return "pinned trust root of " + p.root.Log.Origin
}

// checkBatch holds a batch anchor (versions 1 and 2, version 3's kind
// batch), which commits to no checkpoint, to trust.Root.AdmitBatch: its
// block before the log began, its account listed from size 0 and not
// retired by then. With nothing pinned (InsecureTrustReceipt) there is no
// log start to hold it to, and the Result's warning says so.
func checkBatch(a receipt.Anchor, got Tx, p pin) *failure {
	if a.Kind == receipt.AnchorCheckpoint || p.root == nil || got.BlockTime.IsZero() {
		return nil // a block with no time fails the finality or time check
	}
	if err := p.root.AdmitBatch(a.Chain, got.Network, got.Sender, got.BlockTime); err != nil {
		return failed(CheckBatch, "transaction %s: %v", a.TxRef, err)
	}
	return nil
}
