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
	Completed bool    // the network's backfill completed
}

// Reconciliation is how a balance came out.
type Reconciliation struct {
	Computed   *big.Int // opening + received − sent − fees
	Reconciled *bool    // nil: could not be checked
	Detail     string   // why not reconciled or not checked
}

// Reconcile computes each balance from its opening and the wallet's moves
// of its asset on its network, and checks it against what the chain says
// (only when the network's backfill completed and the chain's balance is
// known). It returns one Reconciliation per balance, in order.
func Reconcile(moves []Move, bals []Balance) []Reconciliation {
	type assetKey struct{ network, asset string }
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
	out := make([]Reconciliation, 0, len(bals))
	for _, b := range bals {
		computed := new(big.Int).Set(b.Opening.Amount)
		if n := net[assetKey{b.Network, b.Opening.Asset}]; n != nil {
			computed.Add(computed, n)
		}
		r := Reconciliation{Computed: computed}
		switch {
		case !b.Completed:
			r.Detail = "the backfill of " + b.Network + " did not complete"
		case !b.Closing.Known:
			r.Detail = "the chain's balance at the end of the scan is not known"
		default:
			ok := computed.Cmp(b.Closing.Amount) == 0
			r.Reconciled = &ok
			if !ok {
				diff := new(big.Int).Sub(b.Closing.Amount, computed)
				r.Detail = fmt.Sprintf("the chain holds %s more than the stored transfers explain", diff)
				if diff.Sign() < 0 {
					r.Detail = fmt.Sprintf("the chain holds %s less than the stored transfers explain", new(big.Int).Neg(diff))
				}
				if !b.Opening.Known {
					r.Detail += fmt.Sprintf("; the balance at block %d, before the history scanned, was not known to the node and was taken as 0", b.OpeningAt)
				}
			}
		}
		out = append(out, r)
	}
	return out
}
