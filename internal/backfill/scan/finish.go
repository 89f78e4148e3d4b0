package scan

import (
	"fmt"
	"math/big"
)

// Transfer classes set when a wallet's backfill finishes, one per
// transaction, from everything the wallet did in it.
const (
	ClassReceived = "received" // only received
	ClassSent     = "sent"     // only sent (and the fee)
	ClassSwap     = "swap"     // sent one asset and received another
	ClassSelf     = "self"     // moved to itself
	ClassFee      = "fee"      // only paid a fee (a contract call, an approval, a failed transaction)
)

// Move is one of a wallet's stored transfers and the network it is on.
type Move struct {
	Network string
	Transfer
}

// TxClass is the class of one of a wallet's transactions.
type TxClass struct {
	Network string
	Tx      string
	Class   string
}

// Classify gives each transaction of moves its class, from everything the
// wallet moved in it: a swap sent and received more than one asset; else it
// sent, received or moved to itself; a transaction with nothing but a fee is
// a fee. The classes come in the order of each transaction's first move.
func Classify(moves []Move) []TxClass {
	type txKey struct{ network, tx string }
	type seen struct {
		in, out, self bool
		assets        map[string]bool
	}
	var order []txKey
	byTx := map[txKey]*seen{}
	for _, m := range moves {
		k := txKey{m.Network, m.Tx}
		sn := byTx[k]
		if sn == nil {
			sn = &seen{assets: map[string]bool{}}
			byTx[k] = sn
			order = append(order, k)
		}
		if m.Kind == KindFee {
			continue
		}
		sn.assets[m.Asset] = true
		switch m.Direction {
		case In:
			sn.in = true
		case Out:
			sn.out = true
		case Self:
			sn.self = true
		}
	}
	out := make([]TxClass, 0, len(order))
	for _, k := range order {
		sn := byTx[k]
		class := ClassFee
		switch {
		case sn.in && sn.out && len(sn.assets) > 1:
			class = ClassSwap
		case sn.out:
			class = ClassSent
		case sn.in:
			class = ClassReceived
		case sn.self:
			class = ClassSelf
		}
		out = append(out, TxClass{Network: k.network, Tx: k.tx, Class: class})
	}
	return out
}

// Balance is one asset of a wallet on a network, as Reconcile needs it:
// what the chain said the wallet held of it before the start of the history
// and at the end of the scan.
type Balance struct {
	Network   string
	Opening   Holding // its Asset is the balance's; Amount is 0 when not Known
	OpeningAt uint64  // the block (or slot) before the history
	Closing   Holding // at the end of the scan
	ClosingAt uint64
	Completed bool // the network's backfill completed
}

// Reconciliation is how a balance came out.
type Reconciliation struct {
	Opening    *big.Int // the opening balance: as the chain said, or derived from the closing one
	Computed   *big.Int // opening + received − sent − fees
	Reconciled *bool    // nil: could not be checked
	Detail     string   // why not reconciled or not checked
}

// Reconcile computes each balance from its opening and the wallet's moves
// of its asset on its network, and checks it against what the chain says
// (only when the network's backfill completed and the chain's balance is
// known). An opening the node could not say (it keeps recent state only)
// is taken as 0 when that reconciles; otherwise it is derived back from
// the chain's balance at the end of the scan less the moves, and the
// balance, the chain's by construction, is not checked, unless the derived
// opening is negative: then the moves explain more than the chain holds,
// and the balance does not reconcile (docs/backfill.md, "Balances on a
// node that keeps recent state only"). It
// returns one Reconciliation per balance, in order.
func Reconcile(moves []Move, bals []Balance) []Reconciliation {
	net := netMoves(moves)
	out := make([]Reconciliation, 0, len(bals))
	for _, b := range bals {
		moved := new(big.Int)
		if n := net[assetKey{b.Network, b.Opening.Asset}]; n != nil {
			moved.Set(n)
		}
		r := Reconciliation{Opening: new(big.Int).Set(b.Opening.Amount)}
		r.Computed = new(big.Int).Add(r.Opening, moved)
		switch {
		case !b.Completed:
			r.Detail = "the backfill of " + b.Network + " did not complete"
		case !b.Closing.Known:
			r.Detail = "the chain's balance at the end of the scan is not known"
		case !b.Opening.Known && r.Computed.Cmp(b.Closing.Amount) != 0:
			r = derived(b, moved)
		default:
			ok := r.Computed.Cmp(b.Closing.Amount) == 0
			r.Reconciled = &ok
			if !ok {
				r.Detail = difference(b.Closing.Amount, r.Computed)
			}
		}
		out = append(out, r)
	}
	return out
}

type assetKey struct{ network, asset string }

// netMoves is what the moves add up to per network and asset: received
// less sent (fees included).
func netMoves(moves []Move) map[assetKey]*big.Int {
	net := map[assetKey]*big.Int{}
	for _, m := range moves {
		k := assetKey{m.Network, m.Asset}
		if net[k] == nil {
			net[k] = new(big.Int)
		}
		switch m.Direction {
		case In:
			net[k].Add(net[k], m.Amount)
		case Out:
			net[k].Sub(net[k], m.Amount)
		}
	}
	return net
}

// derived reconciles a balance whose opening the node could not say back
// from the chain's balance at the end of the scan: opening = closing −
// moved.
func derived(b Balance, moved *big.Int) Reconciliation {
	r := Reconciliation{Opening: new(big.Int).Sub(b.Closing.Amount, moved), Computed: new(big.Int).Set(b.Closing.Amount)}
	if r.Opening.Sign() < 0 {
		// No opening explains it: taken as 0, the difference shows.
		no := false
		r = Reconciliation{Opening: new(big.Int), Computed: new(big.Int).Set(moved), Reconciled: &no}
		r.Detail = difference(b.Closing.Amount, moved) +
			fmt.Sprintf("; the balance at block %d, before the history scanned, was not known to the node and was taken as 0", b.OpeningAt)
		return r
	}
	r.Detail = fmt.Sprintf("not checked: the node no longer knows the balance at block %d, before the history scanned, so the "+
		"opening balance, %s, is the chain's balance at block %d less the transfers scanned", b.OpeningAt, r.Opening, b.ClosingAt)
	if s := ArchiveSetting(b.Network); s != "" {
		r.Detail += "; " + s + ", an archive endpoint, lets keeper read it and check"
	}
	return r
}

// difference says how the chain's balance differs from the computed one.
func difference(chain, computed *big.Int) string {
	diff := new(big.Int).Sub(chain, computed)
	if diff.Sign() < 0 {
		return fmt.Sprintf("the chain holds %s less than the stored transfers explain", new(big.Int).Neg(diff))
	}
	return fmt.Sprintf("the chain holds %s more than the stored transfers explain", diff)
}
