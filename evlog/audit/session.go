package audit

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
)

// session reads one account on one network through every endpoint there:
// it lists the transactions the account sent (chainKind.sent), reads each
// from every endpoint, reports where they disagree, judges each as a
// verifier would (JudgeTransaction), checks the ones keeper lists, and
// returns the checkpoints the account anchored.
type session struct {
	target
	network string // the endpoints' network
	kind    chainKind
	eps     []*endpoint    // on network; reads start with the first
	heads   []uint64       // each endpoint's head as the session began
	listed  []evlog.Anchor // the anchors keeper lists from the account
	root    trust.Root     // what judges the account's transactions
	key     evlog.Key
	trusted bool   // root is a pinned trust root, not the short form
	scan    uint64 // Options.ScanBlocks
	r       *Report
	first   map[string]answer // the first endpoint's answers, by ref
}

// sentTx is one transaction a session reads: one the account sent, or one
// keeper lists from it.
type sentTx struct {
	ref    string
	index  int           // its place among the account's transactions in its block (EVM: its nonce)
	listed *evlog.Anchor // keeper lists it
	lone   bool          // keeper lists it, and the account's history does not hold it
}

func (s *session) run(ctx context.Context) ([]Anchored, error) {
	var (
		eps   []*endpoint
		heads []uint64
		down  []string
	)
	for _, e := range s.eps {
		h, err := s.kind.head(ctx, e.c)
		if err != nil {
			down = append(down, fmt.Sprintf("%s: %v", e.name, err))
			continue
		}
		eps, heads = append(eps, e), append(heads, h)
	}
	if len(eps) == 0 {
		return nil, errors.New(strings.Join(down, "; "))
	}
	for _, d := range down {
		s.r.find(KindUnread, s.chain, "cannot read %s through %s", s.target, d)
	}
	s.eps, s.heads, s.first = eps, heads, map[string]answer{}
	txs, err := s.kind.sent(ctx, s)
	if err != nil {
		return nil, err
	}
	var out []Anchored
	for _, t := range txs {
		out = append(out, s.judge(ctx, t)...)
	}
	return out, nil
}

// readFirst reads ref with the first endpoint, once.
func (s *session) readFirst(ctx context.Context, ref string) answer {
	if a, ok := s.first[ref]; ok {
		return a
	}
	tx, err := s.kind.read(ctx, s.eps[0].c, ref)
	a := answer{ep: s.eps[0], head: s.heads[0], tx: tx, err: err}
	s.first[ref] = a
	return a
}

// judge reads t from every endpoint, compares and judges what they say,
// and returns the checkpoints it anchors when the account sent it.
func (s *session) judge(ctx context.Context, t sentTx) []Anchored {
	as := []answer{s.readFirst(ctx, t.ref)}
	for i, e := range s.eps[1:] {
		tx, err := s.kind.read(ctx, e.c, t.ref)
		as = append(as, answer{ep: e, head: s.heads[i+1], tx: tx, err: err})
	}
	good := s.compare(t.ref, as)
	if len(good) == 0 {
		return nil
	}
	if t.listed != nil {
		s.checkListed(*t.listed, t.ref, good[0].tx)
	}
	if t.lone && good[0].tx.Found {
		s.r.Warnings = append(s.r.Warnings, fmt.Sprintf("%s: tx %s is not in %s's finalized history yet; audited on its own", s.chain, t.ref, s.address))
	}
	seen := map[string]bool{}
	var own *chainread.Tx
	judged := false
	for _, a := range good {
		if !trust.SameAddress(a.tx.Sender, s.address) {
			continue // another's: not this account's to answer for
		}
		judged = true
		for _, f := range JudgeTransaction(s.root, s.key, s.chain, t.ref, a.tx, nil) {
			switch {
			case seen[f.String()]:
			case f.Kind == KindBatch && !s.trusted:
				s.r.Warnings = append(s.r.Warnings, f.String()+" (no trust root pinned: batch anchors are judged only against one)")
			default:
				s.r.Findings = append(s.r.Findings, f)
			}
			seen[f.String()] = true
		}
		if own == nil && a.inBlock() && a.tx.Succeeded {
			own = &a.tx
		}
	}
	if judged {
		s.r.Transactions[s.chain]++
	}
	if own == nil {
		return nil
	}
	p, n := anchorPayload(own.Network, own.Payloads)
	if n != 1 || p.Checkpoint == nil {
		return nil
	}
	return []Anchored{{Chain: s.chain, Account: own.Sender, TxRef: t.ref, Block: own.Block, Index: t.index, Ref: *p.Checkpoint}}
}

// checkListed checks an anchor keeper lists against what the chain holds:
// the transaction exists, the account sent it, it succeeded, it sits in
// the block keeper names, and it commits to the checkpoint size keeper
// names.
func (s *session) checkListed(a evlog.Anchor, ref string, tx chainread.Tx) {
	find := func(format string, args ...any) { s.r.find(KindAnchor, s.chain, format, args...) }
	if a.Network != "" && a.Network != s.network {
		find("keeper lists tx %s on network %s, and the node is on %s", ref, a.Network, s.network)
	}
	switch {
	case !tx.Found:
		find("keeper lists tx %s (checkpoint of %d entries), which the node does not have (%s)", ref, a.Size, tx.Detail)
	case !trust.SameAddress(tx.Sender, s.address):
		verb, who := "sent", "sender"
		if s.chain == "solana" {
			verb, who = "paid", "fee payer"
		}
		find("keeper lists tx %s, which was not %s by the anchoring account %s (%s %s)", ref, verb, s.address, who, tx.Sender)
	case tx.Block == 0:
		find("keeper lists tx %s as confirmed, and it is not in a block", ref)
	case !tx.Succeeded:
		find("keeper lists tx %s, which failed (%s)", ref, tx.Detail)
	default:
		if tx.Block != a.Block || (a.BlockHash != "" && !strings.EqualFold(tx.BlockHash, a.BlockHash)) {
			find("keeper lists tx %s in block %d (%s), and it is in block %d (%s)", ref, a.Block, a.BlockHash, tx.Block, tx.BlockHash)
		}
		switch p, n := anchorPayload(tx.Network, tx.Payloads); {
		case n != 1 || p.Checkpoint == nil:
			find("keeper lists tx %s as an anchor of %d entries, and it commits to no checkpoint", ref, a.Size)
		case p.Checkpoint.Size != a.Size:
			find("keeper lists tx %s as an anchor of %d entries, and it commits to %d", ref, a.Size, p.Checkpoint.Size)
		}
	}
}
