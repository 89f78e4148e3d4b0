package audit

import (
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/evlog/trust"
)

// How the EVM scan reads blocks: evmScanBatch at a time, at most
// evmScanParallel calls in flight.
const (
	evmScanBatch    = 50
	evmScanParallel = 8
)

// evmKind reads an EVM chain (EtherLink). An account's transactions are
// numbered by its nonces, so the audit can tell whether it has seen them
// all: eth_getTransactionCount at the head says how many it sent, keeper's
// list accounts for its anchors, and blocks back from the head are scanned
// for the others, every transaction in them decoded and its sender
// recovered (chainread.DecodeEVMTransaction). The scan goes back
// Options.ScanBlocks blocks when set; else DefaultScanBlocks and, with a
// trust root, on to the block of the time the root first listed the
// account. A nonce not found is a finding (KindNonce).
type evmKind struct{}

func (evmKind) network(ctx context.Context, c chainread.Caller) (string, error) {
	raw, err := c.Call(ctx, "eth_chainId")
	if err != nil {
		return "", fmt.Errorf("eth_chainId: %w", err)
	}
	id, err := evmQuantity(raw)
	if err != nil {
		return "", fmt.Errorf("eth_chainId: %w", err)
	}
	return chainread.EVMNetwork(id), nil
}

func (evmKind) head(ctx context.Context, c chainread.Caller) (uint64, error) {
	raw, err := c.Call(ctx, "eth_blockNumber")
	if err != nil {
		return 0, fmt.Errorf("eth_blockNumber: %w", err)
	}
	n, err := evmQuantity(raw)
	if err != nil {
		return 0, fmt.Errorf("eth_blockNumber: %w", err)
	}
	return n, nil
}

func (evmKind) read(ctx context.Context, c chainread.Caller, ref string) (chainread.Tx, error) {
	h, err := chainread.EVMHash(ref)
	if err != nil {
		return chainread.Tx{}, err
	}
	return chainread.EVM(ctx, c, h)
}

func (evmKind) sent(ctx context.Context, s *session) ([]sentTx, error) {
	acct, err := chainread.ParseEVMAddress(s.address)
	if err != nil {
		return nil, err
	}
	sent, err := chainread.EVMTransactionCount(ctx, s.eps[0].c, acct, "latest")
	if err != nil {
		return nil, err
	}
	s.compareNonces(ctx, acct)
	seen := map[uint64]bool{}
	var out []sentTx
	for i := range s.listed {
		a := &s.listed[i]
		h, err := chainread.EVMHash(a.TxRef)
		if err != nil {
			s.r.find(KindAnchor, s.chain, "keeper lists %q, which is not a transaction hash", a.TxRef)
			continue
		}
		t := sentTx{ref: hex0x(h[:]), listed: a}
		if got := s.readFirst(ctx, t.ref); got.err == nil && got.tx.Found && trust.SameAddress(got.tx.Sender, s.address) {
			seen[got.tx.Nonce] = true
			t.index = int(got.tx.Nonce)
		}
		out = append(out, t)
	}
	need := map[uint64]bool{}
	for n := range sent {
		if !seen[n] {
			need[n] = true
		}
	}
	if len(need) == 0 {
		return out, nil
	}
	found, lowest, err := s.scanEVM(ctx, acct, need)
	if err != nil {
		return nil, err
	}
	out = append(out, found...)
	if len(need) > 0 {
		what := "nonce " + ranges(need) + " is"
		if len(need) > 1 {
			what = "nonces " + ranges(need) + " are"
		}
		s.r.find(KindNonce, s.chain, "%s sent %d transactions; %s neither among the anchors keeper lists nor in blocks %d–%d, so not audited (raise --scan-blocks)",
			chainread.ChecksumAddress(acct), sent, what, lowest, s.heads[0])
	}
	return out, nil
}

// compareNonces asks every endpoint how many transactions the account had
// sent by the lowest of their heads: endpoints that disagree are a finding.
func (s *session) compareNonces(ctx context.Context, acct [20]byte) {
	if len(s.eps) < 2 {
		return
	}
	at := slices.Min(s.heads)
	var said []string
	counts := map[uint64]bool{}
	for _, e := range s.eps {
		n, err := chainread.EVMTransactionCount(ctx, e.c, acct, evmTag(at))
		if err != nil {
			s.r.find(KindUnread, s.chain, "%s: cannot read the nonce of %s at block %d: %v", e.name, s.address, at, err)
			continue
		}
		counts[n] = true
		said = append(said, fmt.Sprintf("%s says %d", e.name, n))
	}
	if len(counts) > 1 {
		s.r.find(KindEndpoints, s.chain, "the endpoints disagree on how many transactions %s had sent by block %d: %s", s.address, at, strings.Join(said, ", "))
	}
}

// scanEVM reads blocks back from the first endpoint's head until every
// nonce in need is found (found nonces leave need) or the scan's floor is
// reached, and returns the account's transactions found and the lowest
// block read.
func (s *session) scanEVM(ctx context.Context, acct [20]byte, need map[uint64]bool) ([]sentTx, uint64, error) {
	c, head := s.eps[0].c, s.heads[0]
	chainID, err := strconv.ParseUint(strings.TrimPrefix(s.network, "eip155:"), 10, 64)
	if err != nil {
		return nil, 0, fmt.Errorf("network %s is not an EVM chain's", s.network)
	}
	window := cmp.Or(s.scan, DefaultScanBlocks)
	floor := head + 1 - min(window, head+1)
	extended := s.scan > 0 || s.since.IsZero() // nothing more to read below floor
	var out []sentTx
	lowest := head + 1
	for {
		for lowest > floor && len(need) > 0 {
			hi := lowest - 1
			lo := max(floor, hi+1-min(evmScanBatch, hi+1))
			blocks, err := evmBlocks(ctx, c, lo, hi)
			if err != nil {
				return nil, 0, err
			}
			for i := len(blocks) - 1; i >= 0; i-- {
				out = append(out, s.fromBlock(acct, chainID, lo+uint64(i), blocks[i], need)...)
			}
			lowest = lo
		}
		if len(need) == 0 || extended {
			return out, lowest, nil
		}
		extended = true
		listedAt, err := evmBlockAtOrAfter(ctx, c, s.since, head)
		if err != nil {
			return nil, 0, fmt.Errorf("the block of %s, when the trust root listed %s: %w", s.since.UTC().Format(time.RFC3339), s.address, err)
		}
		if listedAt >= floor {
			return out, lowest, nil
		}
		floor = listedAt
	}
}

// fromBlock takes the account's transactions with needed nonces out of a
// block (a full eth_getBlockByNumber answer). Every transaction is decoded
// and its sender recovered; the node's word (its "from") only names, in a
// warning, a transaction of the account that no verifier reads.
func (s *session) fromBlock(acct [20]byte, chainID, number uint64, raw json.RawMessage, need map[uint64]bool) []sentTx {
	var b struct {
		Transactions []json.RawMessage `json:"transactions"`
	}
	if len(raw) == 0 || string(raw) == "null" || json.Unmarshal(raw, &b) != nil {
		return nil
	}
	var out []sentTx
	for _, rawTx := range b.Transactions {
		tx, err := chainread.DecodeEVMTransaction(rawTx, [32]byte{}, chainID)
		if err != nil {
			var claim struct {
				From string `json:"from"`
				Hash string `json:"hash"`
			}
			if json.Unmarshal(rawTx, &claim) == nil && trust.SameAddress(claim.From, s.address) {
				s.r.Warnings = append(s.r.Warnings, fmt.Sprintf("%s: the node says %s sent tx %s in block %d, which no verifier reads: %v", s.chain, s.address, claim.Hash, number, err))
			}
			continue
		}
		if tx.Sender != acct || !need[tx.Nonce] {
			continue
		}
		delete(need, tx.Nonce)
		out = append(out, sentTx{ref: hex0x(tx.Hash[:]), index: int(tx.Nonce)})
	}
	return out
}

// evmBlocks reads blocks lo to hi with their transactions, some at once.
func evmBlocks(ctx context.Context, c chainread.Caller, lo, hi uint64) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, hi-lo+1)
	errs := make([]error, len(out))
	sem := make(chan struct{}, evmScanParallel)
	var wg sync.WaitGroup
	for i := range out {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			out[i], errs[i] = c.Call(ctx, "eth_getBlockByNumber", evmTag(lo+uint64(i)), true)
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("eth_getBlockByNumber %d: %w", lo+uint64(i), err)
		}
	}
	return out, nil
}

// evmBlockAtOrAfter is the first block at or below head whose time is at
// or after t (head+1 when none is), found by bisection over rehashed
// headers.
func evmBlockAtOrAfter(ctx context.Context, c chainread.Caller, t time.Time, head uint64) (uint64, error) {
	lo, hi := uint64(0), head+1
	for lo < hi {
		mid := lo + (hi-lo)/2
		raw, err := c.Call(ctx, "eth_getBlockByNumber", evmTag(mid), false)
		if err != nil {
			return 0, fmt.Errorf("eth_getBlockByNumber %d: %w", mid, err)
		}
		h, err := chainread.DecodeEVMHeader(raw)
		if err != nil {
			return 0, fmt.Errorf("eth_getBlockByNumber %d: %w", mid, err)
		}
		if !time.Unix(int64(h.Time), 0).Before(t) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, nil
}

// evmQuantity reads a JSON-RPC QUANTITY that fits 64 bits.
func evmQuantity(raw json.RawMessage) (uint64, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || !strings.HasPrefix(s, "0x") {
		return 0, fmt.Errorf("%w: %.40s is not a quantity", chainread.ErrMalformed, raw)
	}
	n, err := strconv.ParseUint(s[2:], 16, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %.40s is not a quantity", chainread.ErrMalformed, raw)
	}
	return n, nil
}

func evmTag(n uint64) string { return "0x" + strconv.FormatUint(n, 16) }

func hex0x(b []byte) string { return "0x" + hex.EncodeToString(b) }

// ranges spells a set of numbers as sorted ranges: "0–2, 5".
func ranges(set map[uint64]bool) string {
	ns := make([]uint64, 0, len(set))
	for n := range set {
		ns = append(ns, n)
	}
	slices.Sort(ns)
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, fmt.Sprint(ns[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d–%d", ns[i], ns[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}
