package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/keeperhq/keeper/chainread"
)

// solanaKind reads Solana: an account's whole finalized history
// (chainread.SolanaHistory: getSignaturesForAddress paged back to its first
// transaction, so no number of others' transactions can push the
// account's own out of sight), from every endpoint, and every transaction
// in it (chainread.Solana), which counts as the account's only when the
// account paid for it and signed it. A history that cannot be read whole
// is a finding (KindUnread); endpoints whose histories differ, one
// (KindEndpoints).
type solanaKind struct{}

func (solanaKind) network(ctx context.Context, c chainread.Caller) (string, error) {
	raw, err := c.Call(ctx, "getGenesisHash")
	if err != nil {
		return "", fmt.Errorf("getGenesisHash: %w", err)
	}
	var h string
	if err := json.Unmarshal(raw, &h); err != nil || h == "" {
		return "", fmt.Errorf("getGenesisHash: %w: %.60s", chainread.ErrMalformed, raw)
	}
	return chainread.SolanaNetwork(h), nil
}

func (solanaKind) head(ctx context.Context, c chainread.Caller) (uint64, error) {
	raw, err := c.Call(ctx, "getSlot", map[string]any{"commitment": "finalized"})
	if err != nil {
		return 0, fmt.Errorf("getSlot: %w", err)
	}
	var slot uint64
	if err := json.Unmarshal(raw, &slot); err != nil {
		return 0, fmt.Errorf("getSlot: %w: %.40s", chainread.ErrMalformed, raw)
	}
	return slot, nil
}

func (solanaKind) read(ctx context.Context, c chainread.Caller, ref string) (chainread.Tx, error) {
	sig, err := chainread.SolanaSignature(ref)
	if err != nil {
		return chainread.Tx{}, err
	}
	return chainread.Solana(ctx, c, sig)
}

func (solanaKind) sent(ctx context.Context, s *session) ([]sentTx, error) {
	histories := make([][]chainread.SolanaSignatureInfo, len(s.eps))
	var (
		read   []int // the endpoints whose history was read whole
		unread []string
	)
	for i, e := range s.eps {
		h, err := chainread.SolanaHistory(ctx, e.c, s.address, "")
		if err != nil {
			unread = append(unread, fmt.Sprintf("%s: %v", e.name, err))
			continue
		}
		histories[i], read = h, append(read, i)
	}
	if len(read) == 0 {
		return nil, fmt.Errorf("its history cannot be read whole: %s", strings.Join(unread, "; "))
	}
	for _, u := range unread {
		s.r.find(KindUnread, s.chain, "the history of %s cannot be read whole through %s", s.address, u)
	}

	order, entries := s.unionOfHistories(histories, read)
	byRef := map[string]int{}
	for i, a := range s.listed {
		byRef[strings.TrimPrefix(a.TxRef, "solana:")] = i
	}
	var out []sentTx
	for _, sig := range order {
		t := sentTx{ref: sig, index: entries[sig].index}
		if i, ok := byRef[sig]; ok {
			t.listed = &s.listed[i]
		}
		out = append(out, t)
	}
	for _, ref := range slices.Sorted(maps.Keys(byRef)) {
		if _, ok := entries[ref]; ok {
			continue
		}
		if _, err := chainread.SolanaSignature(ref); err != nil {
			s.r.find(KindAnchor, s.chain, "keeper lists %q, which is not a transaction signature", s.listed[byRef[ref]].TxRef)
			continue
		}
		out = append(out, sentTx{ref: ref, listed: &s.listed[byRef[ref]], lone: true})
	}
	return out, nil
}

// historyEntry is one transaction of the union of the endpoints'
// histories of an account.
type historyEntry struct {
	slot  uint64
	index int          // its place in the first history that lists it, oldest 1
	in    map[int]bool // the endpoints whose history lists it
}

// unionOfHistories is the union of the histories the endpoints read
// (those in read), in the order the first lists them. An endpoint whose
// history lacks a transaction another lists, in a slot it has finalized,
// is a finding.
func (s *session) unionOfHistories(histories [][]chainread.SolanaSignatureInfo, read []int) ([]string, map[string]*historyEntry) {
	var order []string
	entries := map[string]*historyEntry{}
	for _, i := range read {
		for j, h := range histories[i] {
			e, ok := entries[h.Signature]
			if !ok {
				e = &historyEntry{slot: h.Slot, index: len(histories[i]) - j, in: map[int]bool{}}
				entries[h.Signature] = e
				order = append(order, h.Signature)
			}
			e.in[i] = true
		}
	}
	for _, i := range read {
		var lacks []string
		for _, sig := range order {
			if e := entries[sig]; !e.in[i] && e.slot <= s.heads[i] {
				lacks = append(lacks, fmt.Sprintf("%s (slot %d)", sig, e.slot))
			}
		}
		if len(lacks) > 0 {
			s.r.find(KindEndpoints, s.chain, "%s's history of %s (finalized to slot %d) lacks %d transaction(s) another endpoint lists: %s",
				s.eps[i].name, s.address, s.heads[i], len(lacks), firstFew(lacks, 3))
		}
	}
	return order, entries
}

// firstFew is the first n items, and "…" when there are more.
func firstFew(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + ", …"
}
