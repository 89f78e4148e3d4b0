package devnet

import (
	"encoding/binary"

	"github.com/gagliardetto/solana-go"
)

// Congest puts the cluster under congestion, as mainnet is when blocks are
// full: from the next slot on, the leader leaves out every sendTransaction
// transaction whose compute unit price (ComputeBudget SetComputeUnitPrice,
// micro-lamports per compute unit) is below minPrice. sendTransaction still
// answers with the signature and the RPC node keeps (re)delivering the
// transaction as usual, but it never lands, however often it is sent, and
// expires with its blockhash. Blocks produced meanwhile report, in
// getRecentPrioritizationFees, a fee between minPrice and 1.5 × minPrice:
// what the transactions that filled them paid. Congest(0) ends congestion;
// blocks already produced keep their fees, as the real fee cache does.
func (d *Devnet) Congest(minPrice uint64) { d.mu.Lock(); d.congestion = minPrice; d.mu.Unlock() }

// congestionFee is the least price the other transactions of a congested
// block b paid: minPrice plus up to a half of it, varying with the block.
func congestionFee(b *block, minPrice uint64) uint64 {
	if minPrice == 0 {
		return 0
	}
	return minPrice + binary.LittleEndian.Uint64(b.hash[:8])%(minPrice/2+1)
}

// computeUnitPrice is the price a transaction pays per compute unit (0 when
// it sets none, or sets it wrongly: then it fails anyway).
func computeUnitPrice(m *solana.Message) uint64 {
	b, err := parseBudget(m)
	if err != nil {
		return 0
	}
	return b.price
}
