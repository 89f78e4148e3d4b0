// Package audit is the evidence log's monitor (`keeper log audit`): it
// reads every transaction the anchoring accounts sent on each chain,
// straight from the chains, and the log's own checkpoints and tiles, and
// reports every way the two disagree: a checkpoint not signed by the log's
// key, two checkpoints of one size that differ, a checkpoint that is not
// consistent with an earlier one or with the latest, a smaller tree
// anchored after a bigger one by the same account, tiles or entries that
// do not rebuild the signed root, the latest checkpoint (the one receipts
// name) without the quorum of witness cosignatures the pinned root asks
// for (JudgeCheckpoint), anchors keeper lists that the chain does not hold, a listed account's transaction that any verifier would read as
// an anchor and that should not be one (JudgeTransaction: a near-miss
// payload, a batch anchor after the log began, an anchor of a size the
// pinned trust root does not list the account for, of another key, of
// another root), endpoints of one network that disagree, and a listed
// account, history or transaction that could not be read.
//
// Nothing the log serves is trusted: the key and the accounts are the ones
// the auditor pinned (a trust root, docs/log.md), checkpoints are opened
// with the pinned key, every hash is read through tlog.TileHashReader
// (which checks the tiles against the latest signed root), and consistency
// is proved with tlog.ProveTree and checked with tlog.CheckTree. Every
// transaction is read through package chainread, the one definition every
// verifier of keeper's receipts reads chains with: only a transaction the
// account itself signed counts as its own (on EVM chains the sender
// recovered from the signature, on Solana the fee payer whose signature
// verifies), and its payloads are its exact bytes.
package audit

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/receipt"
)

// DefaultScanBlocks is how many EVM blocks back from the head a monitor
// looks at least for an anchoring account's transactions that keeper does
// not list (Options.ScanBlocks).
const DefaultScanBlocks = 10_000

// Chain is a chain to audit: its name as keeper's anchors spell it
// ("etherlink", "solana"), its JSON-RPC endpoints (RPC, then RPCs), and,
// in the short form (no trust root), the anchoring accounts (empty: the
// ones keeper lists for the chain). Each endpoint's node says which
// network it is on: a chain may have endpoints on every network the trust
// root lists, and several on one network, which are all asked and must
// agree (KindEndpoints). A chain may also be named more than once.
type Chain struct {
	Name     string
	RPC      string
	RPCs     []string // more endpoints of the chain
	Accounts []string
}

// Options configure Run. Something must be pinned: Trust, or Key.
type Options struct {
	Log *evlog.Client
	// Trust is the trust root the auditor pinned (evlog/trust): the log's
	// key, and the accounts whose anchors are read on every network it
	// lists; anchors their accounts sent outside the sizes listed are
	// findings. nil: the short form, Key and Chains' accounts.
	Trust *trust.Root
	// Key is the log's pinned verifier key (with Trust: its key, or nil).
	Key *evlog.Key
	// Chains to read, with their endpoints (and, without Trust, accounts).
	Chains []Chain
	// DefaultRPC, when set, is the endpoint of a chain keeper lists anchors
	// on that Chains does not name ("": none). Chains left without an
	// endpoint are reported as not audited (Report.Warnings).
	DefaultRPC func(chain string) string
	// ScanBlocks bounds the EVM blocks scanned back from the head for
	// nonces keeper's list does not account for. 0: DefaultScanBlocks and,
	// with Trust, on back to the block of the time the root first lists the
	// account, so that every transaction it sent while listed is read.
	ScanBlocks uint64
}

// The kinds of finding.
const (
	KindSignature = "signature" // a checkpoint the log serves is not signed by its key
	KindKey       = "key"       // an anchor or the log names another key
	KindFork      = "fork"      // checkpoints that cannot be of one append-only log
	KindOrder     = "order"     // a smaller tree anchored after a bigger one by one account on a chain
	KindMissing   = "missing"   // the log does not serve a checkpoint a chain holds
	KindTiles     = "tiles"     // hash tiles that do not rebuild the signed root
	KindEntries   = "entries"   // entries that do not hash to the tree's leaves
	KindAnchor    = "anchor"    // an anchor keeper lists that the chain does not bear out
	KindNonce     = "nonce"     // an EVM account's transactions that were not all examined
	KindAccount   = "account"   // an anchor sent by an account the trust root does not list for its network and size
	KindPayload   = "payload"   // a listed account's transaction that holds "keeper:" and is no exact anchor payload
	KindBatch     = "batch"     // a listed account's batch anchor the trust root does not admit (sent after the log began, or from an account that may not)
	KindEndpoints = "endpoints" // endpoints of one network that disagree on an account's transactions or its nonce
	KindUnread    = "unread"    // a listed account, network, history or transaction that could not be read, or no anchor read at all
	KindWitnesses = "witnesses" // the checkpoint the log serves, which receipts name, without the quorum of cosignatures the trust root asks for
)

// Finding is one disagreement.
type Finding struct {
	Kind   string
	Chain  string // "" for the log's own
	Detail string
}

func (f Finding) String() string {
	if f.Chain == "" {
		return f.Kind + ": " + f.Detail
	}
	return f.Kind + ": " + f.Chain + ": " + f.Detail
}

// Report is what an audit found.
type Report struct {
	Latest      evlog.Checkpoint // the log's latest checkpoint (verified)
	Key         evlog.Key
	Trusted     bool           // the accounts are a pinned trust root's, not keeper's list
	Checkpoints int            // distinct anchored checkpoints checked against the log
	Leaves      uint64         // leaves of the latest tree rebuilt from hash tiles and entries
	Anchors     map[string]int // checkpoint anchors read per chain
	// Transactions are the transactions the accounts sent, read and judged
	// (JudgeTransaction), per chain.
	Transactions map[string]int
	Findings     []Finding
	Warnings     []string
}

// OK reports whether the audit found nothing.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

func (r *Report) find(kind, chain, format string, args ...any) {
	r.Findings = append(r.Findings, Finding{Kind: kind, Chain: chain, Detail: fmt.Sprintf(format, args...)})
}

// Anchored is one anchor transaction read from a chain that commits to a
// checkpoint (a keeper-v3 payload sent by an anchoring account), of the
// log's key or another's.
type Anchored struct {
	Chain   string
	Account string
	TxRef   string
	Block   uint64 // block number or slot
	Index   int    // its place among the account's transactions in the block (EVM: its nonce): the account's order is (Block, Index)
	Ref     receipt.CheckpointRef
}

func (a Anchored) String() string {
	return fmt.Sprintf("tx %s (block %d) commits to %d entries", a.TxRef, a.Block, a.Ref.Size)
}

// Run audits the log. An error means the audit could not be made (nothing
// pinned, or the log could not be read); what it found is in the report,
// including the accounts and networks it could not read (KindUnread).
func Run(ctx context.Context, o Options) (*Report, error) {
	if o.Trust != nil {
		k, err := o.Trust.Key()
		if err != nil {
			return nil, err
		}
		if o.Key != nil && o.Key.Text != k.Text {
			return nil, fmt.Errorf("the pinned key %s is not the trust root's %s", o.Key.Text, k.Text)
		}
		o.Key = &k
	}
	if o.Key == nil {
		return nil, ErrNothingPinned
	}
	r := &Report{Anchors: map[string]int{}, Transactions: map[string]int{}, Trusted: o.Trust != nil}
	if ok, err := r.openLatest(ctx, o); err != nil || !ok {
		return r, err
	}
	listed, err := o.Log.Anchors(ctx)
	if errors.Is(err, evlog.ErrNotFound) {
		r.Warnings = append(r.Warnings, "the log lists no anchors ("+evlog.AnchorsPath+"): only the chains' own history is read")
	} else if err != nil {
		return r, err
	}
	anchored, err := readChains(ctx, o, listed, r)
	if err != nil {
		return r, err
	}
	if err := r.catchUp(ctx, o.Log, o.Trust, anchored); err != nil {
		return r, err
	}
	hr := o.Log.HashReader(ctx, r.Latest.Size, r.Latest.Root)
	checkOrder(anchored, r)
	if err := checkAnchored(ctx, o.Log, hr, anchored, r); err != nil {
		return r, err
	}
	if err := checkLeaves(ctx, o.Log, r); err != nil {
		return r, err
	}
	return r, nil
}

// ErrNothingPinned is Run's answer when neither a trust root nor a key is
// pinned: an audit against what the log says of itself proves nothing.
var ErrNothingPinned = errors.New("nothing pinned: give the deployment's trust root (keeper log trust, or /log/trust) or at least the log's verifier key")

// openLatest reads the latest checkpoint, and reports whether it is signed
// with the pinned key: every later check stands on it.
func (r *Report) openLatest(ctx context.Context, o Options) (bool, error) {
	r.Key = *o.Key
	if served, err := o.Log.Key(ctx); err == nil && served.Text != o.Key.Text {
		r.find(KindKey, "", "the log serves the key %s, not the pinned %s", served.Text, o.Key.Text)
	}
	signed, err := o.Log.Checkpoint(ctx)
	if err != nil {
		return false, fmt.Errorf("the log's checkpoint: %w", err)
	}
	c, ok := r.openServed(signed, o.Trust, "the latest checkpoint")
	if !ok {
		return false, nil
	}
	r.Latest = c
	return true, nil
}

// openServed opens the checkpoint the log serves as its latest, the one
// receipts name: signed by the pinned key, and held to the quorum of
// witnesses the pinned root asks for at its size (JudgeCheckpoint). ok is
// false when the log's own signature fails.
func (r *Report) openServed(signed []byte, root *trust.Root, what string) (evlog.Checkpoint, bool) {
	c, err := r.Key.Open(signed)
	if err != nil {
		r.find(KindSignature, "", "%s: %v", what, err)
		return c, false
	}
	if root != nil {
		r.Findings = append(r.Findings, JudgeCheckpoint(*root, signed)...)
	}
	return c, true
}

// JudgeCheckpoint judges a checkpoint a receipt can name (the log serves
// its newest cosigned checkpoint as its latest, and receipts name it) as
// every verifier does (trust.Root.OpenCheckpoint): a KindWitnesses finding
// when it lacks the quorum of valid cosignatures by listed witnesses its
// size needs. Checkpoints that are only anchored carry no cosignature
// while a witness is out, by design, and are not judged here.
func JudgeCheckpoint(root trust.Root, signed []byte) []Finding {
	_, _, err := root.OpenCheckpoint(signed)
	if qe := (*trust.QuorumError)(nil); errors.As(err, &qe) {
		return []Finding{{Kind: KindWitnesses, Detail: "the checkpoint the log serves, which receipts name: " + err.Error()}}
	}
	return nil
}

// catchUp reads the latest checkpoint again when a chain holds a bigger
// one: a live log signs and anchors while the chains are read. The newer
// checkpoint must extend the one read first.
func (r *Report) catchUp(ctx context.Context, log *evlog.Client, root *trust.Root, anchored []Anchored) error {
	behind := false
	for _, a := range anchored {
		behind = behind || (a.Ref.KeyHash == r.Key.Hash && a.Ref.Size > r.Latest.Size)
	}
	if !behind {
		return nil
	}
	signed, err := log.Checkpoint(ctx)
	if err != nil {
		return fmt.Errorf("the log's checkpoint: %w", err)
	}
	c, ok := r.openServed(signed, root, "the latest checkpoint, read again")
	if !ok {
		return nil
	}
	if c.Size <= r.Latest.Size {
		return nil
	}
	hr := log.HashReader(ctx, c.Size, c.Root)
	if err := consistent(hr, r.Latest.Size, r.Latest.Root, c.Size, c.Root); err != nil {
		r.find(KindFork, "", "the latest checkpoint (%d entries) is not consistent with the one read a moment before (%d entries): %v", c.Size, r.Latest.Size, err)
		return nil
	}
	r.Latest = c
	return nil
}

// checkOrder finds, in each account's anchors on a chain, a checkpoint
// anchored after a bigger one: a log only grows, so the sizes one account
// anchors never go down. Two accounts open on one network (workers with
// keys of their own) each take the newest checkpoint when they sign, and
// land in whatever order their chain takes them; a smaller tree of one
// after a bigger of the other is no rollback (and one that is not a
// prefix of it is a fork).
func checkOrder(anchored []Anchored, r *Report) {
	type sender struct{ chain, account string }
	bySender := map[sender][]Anchored{}
	for _, a := range anchored {
		s := sender{a.Chain, a.Account}
		bySender[s] = append(bySender[s], a)
	}
	senders := slices.SortedFunc(maps.Keys(bySender), func(a, b sender) int {
		return cmp.Or(cmp.Compare(a.chain, b.chain), cmp.Compare(a.account, b.account))
	})
	for _, s := range senders {
		chain, as := s.chain, bySender[s]
		slices.SortStableFunc(as, func(a, b Anchored) int {
			return cmp.Or(cmp.Compare(a.Block, b.Block), cmp.Compare(a.Index, b.Index))
		})
		var top *Anchored
		for i := range as {
			a := &as[i]
			if a.Ref.KeyHash != r.Key.Hash {
				continue
			}
			if top != nil && a.Ref.Size < top.Ref.Size {
				r.find(KindOrder, chain, "%s after %s: a smaller tree anchored after a bigger one", a, top)
			}
			if top == nil || a.Ref.Size >= top.Ref.Size {
				top = a
			}
		}
	}
}

// checkAnchored checks every distinct checkpoint of the log's key the
// chains hold (JudgeTransaction reports the others'): signed by the log's
// key (the log serves it, and its root is the chain's), one root
// per size, and each consistent with the next smaller one and with the
// latest, proved from the tiles of the latest tree.
func checkAnchored(ctx context.Context, log *evlog.Client, hr tlog.HashReader, anchored []Anchored, r *Report) error {
	bySize := map[uint64][]Anchored{}
	for _, a := range anchored {
		if a.Ref.KeyHash != r.Key.Hash || a.Ref.Size == 0 {
			continue // another log's: JudgeTransaction found it
		}
		bySize[a.Ref.Size] = append(bySize[a.Ref.Size], a)
	}
	type point struct {
		size uint64
		root [32]byte
		by   Anchored
	}
	var chain []point // the checkpoints checked, by size
	for _, size := range slices.Sorted(maps.Keys(bySize)) {
		as := bySize[size]
		root := as[0].Ref.Root
		forked := false
		for _, a := range as[1:] {
			if a.Ref.Root != root {
				r.find(KindFork, a.Chain, "%s with root %x, and %s on %s with root %x: two trees of one size", a, a.Ref.Root[:8], as[0], as[0].Chain, root[:8])
				forked = true
			}
		}
		r.Checkpoints++
		signed, err := log.CheckpointAt(ctx, size)
		switch {
		case errors.Is(err, evlog.ErrNotFound):
			r.find(KindMissing, as[0].Chain, "%s, and the log serves no checkpoint of that size (%s)", as[0], evlog.CheckpointAtPath(size))
		case err != nil:
			return err
		default:
			c, err := r.Key.Open(signed)
			switch {
			case err != nil:
				r.find(KindSignature, as[0].Chain, "%s: %v", evlog.CheckpointAtPath(size), err)
			case c.Size != size:
				r.find(KindFork, as[0].Chain, "%s is a checkpoint of %d entries", evlog.CheckpointAtPath(size), c.Size)
			case c.Root != root:
				r.find(KindFork, as[0].Chain, "%s with root %x, and the log's signed checkpoint of that size has root %x", as[0], root[:8], c.Root[:8])
			}
		}
		if forked {
			continue
		}
		if size > r.Latest.Size {
			r.find(KindMissing, as[0].Chain, "%s, beyond the log's latest checkpoint of %d entries", as[0], r.Latest.Size)
			continue
		}
		p := point{size, root, as[0]}
		if len(chain) > 0 {
			prev := chain[len(chain)-1]
			if err := consistent(hr, prev.size, prev.root, size, root); err != nil {
				r.find(KindFork, p.by.Chain, "%s is not consistent with %s on %s: %v", p.by, prev.by, prev.by.Chain, err)
			}
		}
		if err := consistent(hr, size, root, r.Latest.Size, r.Latest.Root); err != nil {
			r.find(KindFork, p.by.Chain, "%s is not consistent with the log's latest checkpoint (%d entries): %v", p.by, r.Latest.Size, err)
			continue
		}
		chain = append(chain, p)
	}
	return nil
}

// consistent proves that the tree of size n with root h is a prefix of the
// tree of size t with root th, from hashes of the latest tree.
func consistent(hr tlog.HashReader, n uint64, h [32]byte, t uint64, th [32]byte) error {
	if n == t {
		if h != th {
			return errors.New("another root")
		}
		return nil
	}
	p, err := tlog.ProveTree(int64(t), int64(n), hr)
	if err != nil {
		return fmt.Errorf("no proof from the log's tiles: %w", err)
	}
	return tlog.CheckTree(p, int64(t), th, int64(n), h)
}

// checkLeaves rebuilds the latest checkpoint's root twice: from the
// level-0 hash tiles, and from the entry bundles (each leaf the hash of its
// entry, SHA-256(0x00 ‖ entry)), and compares the two leaf by leaf.
func checkLeaves(ctx context.Context, log *evlog.Client, r *Report) error {
	size := r.Latest.Size
	var fromTiles, fromEntries rootBuilder
	var rewritten []uint64
	for n := uint64(0); n*evlog.TileWidth < size; n++ {
		width := int(min(size-n*evlog.TileWidth, evlog.TileWidth))
		ht := evlog.Tile{Level: 0, N: n, Width: width}
		b, err := log.Tile(ctx, ht)
		if errors.Is(err, evlog.ErrNotFound) {
			r.find(KindTiles, "", "%s is not served, and the latest checkpoint covers it", ht.Path())
			return nil
		}
		if err != nil {
			return err
		}
		if len(b) < width*tlog.HashSize {
			r.find(KindTiles, "", "%s is %d bytes, want %d", ht.Path(), len(b), width*tlog.HashSize)
			return nil
		}
		entries, err := log.EntryBundle(ctx, n, width)
		if errors.Is(err, evlog.ErrNotFound) {
			r.find(KindEntries, "", "%s is not served, and the latest checkpoint covers it", evlog.Tile{Level: evlog.EntriesLevel, N: n, Width: width}.Path())
			return nil
		}
		if err != nil {
			r.find(KindEntries, "", "%v", err)
			return nil
		}
		for i := range width {
			var leaf tlog.Hash
			copy(leaf[:], b[i*tlog.HashSize:])
			fromTiles.add(leaf)
			h := tlog.RecordHash(entries[i][:])
			fromEntries.add(h)
			if h != leaf {
				rewritten = append(rewritten, n*evlog.TileWidth+uint64(i))
			}
		}
	}
	r.Leaves = size
	tilesOK := fromTiles.root() == r.Latest.Root
	if !tilesOK {
		r.find(KindTiles, "", "the level-0 hash tiles do not rebuild the latest checkpoint's root (%d entries)", size)
	}
	switch len(rewritten) {
	case 0:
	case 1:
		r.find(KindEntries, "", "entry %d in the entry bundles does not hash to its leaf in the hash tiles: the entry was rewritten", rewritten[0])
	default:
		r.find(KindEntries, "", "entries %d, … (%d in all) in the entry bundles do not hash to their leaves in the hash tiles: they were rewritten", rewritten[0], len(rewritten))
	}
	if fromEntries.root() != r.Latest.Root && tilesOK && len(rewritten) == 0 {
		r.find(KindEntries, "", "the entry bundles do not rebuild the latest checkpoint's root")
	}
	return nil
}

// rootBuilder computes the RFC 6962 root of a stream of leaf hashes with
// one hash per level: the perfect subtrees of the leaves so far, largest
// first.
type rootBuilder struct {
	stack []tlog.Hash
	sizes []uint64
}

func (b *rootBuilder) add(leaf tlog.Hash) {
	b.stack, b.sizes = append(b.stack, leaf), append(b.sizes, 1)
	for n := len(b.stack); n >= 2 && b.sizes[n-1] == b.sizes[n-2]; n = len(b.stack) {
		b.stack[n-2] = tlog.NodeHash(b.stack[n-2], b.stack[n-1])
		b.sizes[n-2] *= 2
		b.stack, b.sizes = b.stack[:n-1], b.sizes[:n-1]
	}
}

// root folds the subtrees right to left, as RFC 6962 splits a tree at its
// largest power of two.
func (b *rootBuilder) root() tlog.Hash {
	if len(b.stack) == 0 {
		return sha256.Sum256(nil)
	}
	h := b.stack[len(b.stack)-1]
	for i := len(b.stack) - 2; i >= 0; i-- {
		h = tlog.NodeHash(b.stack[i], h)
	}
	return h
}
