package devnet

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"sort"

	"github.com/gagliardetto/solana-go"
)

// Cluster constants, as on mainnet-beta.
const (
	lamportsPerSignature = 5000
	// maxProcessingAge is how many blocks a blockhash stays usable
	// (MAX_PROCESSING_AGE); lastValidBlockHeight = issue height + this.
	maxProcessingAge = 150
	// confirmedDepth / finalizedDepth: a block at slot s is confirmed once the
	// chain reaches slot s+1 and finalized (rooted) at s+32.
	confirmedDepth = 1
	finalizedDepth = 32
	// rentExemptMinimum is the rent-exempt minimum of an account with no
	// data: (128 + 0) * 3480 * 2.
	rentExemptMinimum = 890_880
	// Compute budget defaults.
	defaultInstructionCULimit = 200_000
	maxComputeUnitLimit       = 1_400_000
)

var (
	memoV1ProgramID     = solana.MustPublicKeyFromBase58("Memo1UhkJRfHyvLMcVucJwxXeuD728EqVDDwQDxFMNo")
	nativeLoaderID      = solana.MustPublicKeyFromBase58("NativeLoader1111111111111111111111111111111")
	bpfLoader2ID        = solana.MustPublicKeyFromBase58("BPFLoader2111111111111111111111111111111111")
	bpfLoader1ID        = solana.MustPublicKeyFromBase58("BPFLoader1111111111111111111111111111111111")
	builtinProgramState = map[solana.PublicKey]programAccount{
		solana.SystemProgramID: {lamports: 1, owner: nativeLoaderID, data: []byte("system_program"), builtin: true},
		solana.ComputeBudget:   {lamports: 1, owner: nativeLoaderID, data: []byte("compute_budget_program"), builtin: true},
		solana.MemoProgramID:   {lamports: 521_498_880, owner: bpfLoader2ID},
		memoV1ProgramID:        {lamports: 121_159_680, owner: bpfLoader1ID},
	}
)

// programAccount is the fixed state of a program the devnet knows how to run.
// Their real account data (ELF images) are not reproduced.
type programAccount struct {
	lamports uint64
	owner    solana.PublicKey
	data     []byte
	builtin  bool // native program: no "consumed" log lines
}

// block is one produced (non-skipped) slot.
type block struct {
	slot       uint64
	height     uint64
	parentSlot uint64
	hash       solana.Hash
	prevHash   solana.Hash
	time       int64 // unix seconds
	txs        []*txRecord
	txTotal    uint64 // transactions in this block and its ancestors
	// congestionFee is the least compute unit price (micro-lamports) the
	// other users of a congested block paid; 0 outside congestion (Congest).
	congestionFee uint64
}

// txRecord is a transaction included in a block (successful or failed).
type txRecord struct {
	p     *parsedTx
	block *block
	index int
	res   *execResult
}

func (r *txRecord) slot() uint64 { return r.block.slot }

type balanceEntry struct {
	slot     uint64
	lamports uint64
}

// ledger is the chain state. It is not safe for concurrent use; Devnet
// guards it with its mutex.
type ledger struct {
	blocks    []*block // by height; blocks[0] is genesis
	bySlot    map[uint64]*block
	byHash    map[solana.Hash]*block
	slot      uint64 // last slot ticked, produced or skipped
	balances  map[solana.PublicKey][]balanceEntry
	txs       map[solana.Signature]*txRecord
	byAddress map[solana.PublicKey][]*txRecord // oldest first
	txCount   uint64
}

// newLedger starts a chain whose genesis block is at block height
// baseHeight (0 for a new chain; see heightFile for a restart).
func newLedger(seed []byte, genesisTime int64, baseHeight uint64, genesisHash solana.Hash) *ledger {
	if genesisHash.IsZero() {
		genesisHash = sha256.Sum256(append([]byte("keeper solana devnet genesis "), seed...))
	}
	g := &block{slot: 0, height: baseHeight, hash: genesisHash, time: genesisTime}
	return &ledger{
		blocks:    []*block{g},
		bySlot:    map[uint64]*block{0: g},
		byHash:    map[solana.Hash]*block{g.hash: g},
		balances:  map[solana.PublicKey][]balanceEntry{},
		txs:       map[solana.Signature]*txRecord{},
		byAddress: map[solana.PublicKey][]*txRecord{},
	}
}

func (l *ledger) genesis() *block { return l.blocks[0] }
func (l *ledger) tip() *block     { return l.blocks[len(l.blocks)-1] }

// blockAtOrBefore returns the newest block whose slot is <= slot.
func (l *ledger) blockAtOrBefore(slot uint64) *block {
	i := sort.Search(len(l.blocks), func(i int) bool { return l.blocks[i].slot > slot })
	if i == 0 {
		return l.blocks[0]
	}
	return l.blocks[i-1]
}

// commitment levels.
type commitment int

const (
	processed commitment = iota
	confirmed
	finalized
)

func (c commitment) String() string {
	return [...]string{"processed", "confirmed", "finalized"}[c]
}

// bank returns the frozen block that answers reads at commitment c.
func (l *ledger) bank(c commitment) *block {
	tip := l.tip()
	switch c {
	case confirmed:
		if tip.slot < confirmedDepth {
			return l.genesis()
		}
		return l.blockAtOrBefore(tip.slot - confirmedDepth)
	case finalized:
		if tip.slot < finalizedDepth {
			return l.genesis()
		}
		return l.blockAtOrBefore(tip.slot - finalizedDepth)
	}
	return tip
}

// statusOf returns where an included transaction stands now.
func (l *ledger) statusOf(rec *txRecord) (c commitment, confirmations *uint64) {
	switch {
	case rec.slot() <= l.bank(finalized).slot:
		return finalized, nil
	case rec.slot() <= l.bank(confirmed).slot:
		c = confirmed
	default:
		c = processed
	}
	n := l.tip().slot - rec.slot()
	return c, &n
}

// visible reports whether rec is part of the chain as seen by bank b.
func visible(rec *txRecord, b *block) bool { return rec.slot() <= b.slot }

// balanceAt returns an account's lamports as of slot (math.MaxUint64: latest).
func (l *ledger) balanceAt(pk solana.PublicKey, slot uint64) uint64 {
	if p, ok := builtinProgramState[pk]; ok {
		return p.lamports
	}
	h := l.balances[pk]
	i := sort.Search(len(h), func(i int) bool { return h[i].slot > slot })
	if i == 0 {
		return 0
	}
	return h[i-1].lamports
}

func (l *ledger) setBalance(pk solana.PublicKey, slot, lamports uint64) {
	h := l.balances[pk]
	if n := len(h); n > 0 && h[n-1].slot == slot {
		h[n-1].lamports = lamports
		return
	}
	l.balances[pk] = append(h, balanceEntry{slot: slot, lamports: lamports})
}

// credit adds lamports to an account. An account never seen before is created
// at genesis, so every commitment level sees it at once; an existing one is
// credited at the current tip.
func (l *ledger) credit(pk solana.PublicKey, lamports uint64) {
	if len(l.balances[pk]) == 0 {
		l.balances[pk] = []balanceEntry{{slot: 0, lamports: lamports}}
		return
	}
	cur := l.balanceAt(pk, math.MaxUint64)
	l.setBalance(pk, l.tip().slot, satAdd(cur, lamports))
}

func satAdd(a, b uint64) uint64 {
	if a+b < a {
		return math.MaxUint64
	}
	return a + b
}

// nextBlockHash derives a block's hash from its parent and slot.
func nextBlockHash(parent solana.Hash, slot uint64) solana.Hash {
	var buf [40]byte
	copy(buf[:32], parent[:])
	binary.LittleEndian.PutUint64(buf[32:], slot)
	return solana.Hash(sha256.Sum256(buf[:]))
}

// hashValidIn reports whether blockhash h may still be used by a transaction
// processed in a block at height atHeight whose ancestors are those at or
// before slot maxSlot.
func (l *ledger) hashValidIn(h solana.Hash, maxSlot, atHeight uint64) bool {
	b, ok := l.byHash[h]
	if !ok || b.slot > maxSlot {
		return false
	}
	return atHeight >= b.height && atHeight-b.height <= maxProcessingAge
}

// record adds an included transaction to the indexes.
func (l *ledger) record(rec *txRecord) {
	rec.block.txs = append(rec.block.txs, rec)
	l.txs[rec.p.sig] = rec
	l.txCount++
	seen := map[solana.PublicKey]bool{}
	for _, k := range rec.p.keys {
		if !seen[k] {
			seen[k] = true
			l.byAddress[k] = append(l.byAddress[k], rec)
		}
	}
}

// openBlock starts the block at slot on the tip, stamped t (unix seconds).
func (l *ledger) openBlock(slot uint64, t int64) *block {
	parent := l.tip()
	return &block{
		slot:       slot,
		height:     parent.height + 1,
		parentSlot: parent.slot,
		prevHash:   parent.hash,
		hash:       nextBlockHash(parent.hash, slot),
		time:       t,
		txTotal:    parent.txTotal,
	}
}

// env is the bank transactions of block b run against.
func (l *ledger) env(b *block) execEnv {
	return execEnv{
		hashOK: func(h solana.Hash) bool { return l.hashValidIn(h, math.MaxUint64, b.height) },
		seen:   func(s solana.Signature) bool { _, ok := l.txs[s]; return ok },
		state:  newView(func(pk solana.PublicKey) uint64 { return l.balanceAt(pk, math.MaxUint64) }),
	}
}

// include commits a transaction that executed (res.committed) into b.
func (l *ledger) include(b *block, p *parsedTx, res *execResult) {
	for k, v := range res.writes {
		l.setBalance(k, b.slot, v)
	}
	l.record(&txRecord{p: p, block: b, index: len(b.txs), res: res})
}

// seal makes b the tip.
func (l *ledger) seal(b *block) {
	b.txTotal += uint64(len(b.txs))
	l.blocks = append(l.blocks, b)
	l.bySlot[b.slot] = b
	l.byHash[b.hash] = b
	l.slot = max(l.slot, b.slot)
}
