package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/internal/redact"
)

// endpoint is one JSON-RPC endpoint of a chain, opened: its node said
// which network it is on.
type endpoint struct {
	chain   string
	name    string // how findings name it: its place among the chain's endpoints, scheme and host
	c       chainread.Caller
	network string
	failed  error // why it could not be opened
}

// chainKind is how the audit reads one kind of chain. Every transaction is
// read through package chainread, as every verifier reads it.
type chainKind interface {
	// network is the CAIP-2 network c's node is on.
	network(ctx context.Context, c chainread.Caller) (string, error)
	// head is how far c's node has the chain (EVM: its latest block;
	// Solana: its finalized slot): a transaction past an endpoint's head
	// is not there yet, rather than hidden.
	head(ctx context.Context, c chainread.Caller) (uint64, error)
	// sent lists the transactions the session's account sent, read with
	// its first endpoint, and the ones keeper lists from it; what stops it
	// from listing them all is a finding (KindNonce, KindUnread,
	// KindEndpoints).
	sent(ctx context.Context, s *session) ([]sentTx, error)
	// read reads one transaction.
	read(ctx context.Context, c chainread.Caller, ref string) (chainread.Tx, error)
}

// chainKinds are the chains the audit reads, by keeper's name for them.
var chainKinds = map[string]chainKind{
	"etherlink": evmKind{},
	"solana":    solanaKind{},
}

// rpcs are a chain's endpoints: RPC, then RPCs, each once.
func (c Chain) rpcs() []string {
	var out []string
	for _, u := range append([]string{c.RPC}, c.RPCs...) {
		if u != "" && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// openEndpoints opens every endpoint of every chain, asking each node its
// network. One that cannot be opened is kept with why.
func openEndpoints(ctx context.Context, chains []Chain) []*endpoint {
	var out []*endpoint
	count := map[string]int{}
	for _, ch := range chains {
		kind := chainKinds[ch.Name]
		for _, u := range ch.rpcs() {
			count[ch.Name]++
			e := &endpoint{chain: ch.Name, name: fmt.Sprintf("endpoint %d (%s)", count[ch.Name], redact.Endpoint(u)), c: &fixedAnswers{Caller: chainread.HTTP(u, nil)}}
			e.network, e.failed = kind.network(ctx, e.c)
			if e.failed != nil {
				e.failed = fmt.Errorf("%s: %s: %w", ch.Name, e.name, e.failed)
			}
			out = append(out, e)
		}
	}
	return out
}

// fixedAnswers remembers the answers that never change for a node (its
// chain id, its genesis hash), which chainread asks with every
// transaction.
type fixedAnswers struct {
	chainread.Caller
	mu  sync.Mutex
	got map[string]json.RawMessage
}

func (f *fixedAnswers) Call(ctx context.Context, method string, params ...any) (json.RawMessage, error) {
	if len(params) > 0 || (method != "eth_chainId" && method != "getGenesisHash") {
		return f.Caller.Call(ctx, method, params...)
	}
	f.mu.Lock()
	raw, ok := f.got[method]
	f.mu.Unlock()
	if ok {
		return raw, nil
	}
	raw, err := f.Caller.Call(ctx, method)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.got == nil {
		f.got = map[string]json.RawMessage{}
	}
	f.got[method] = raw
	f.mu.Unlock()
	return raw, nil
}

// answer is what one endpoint says of one transaction.
type answer struct {
	ep   *endpoint
	head uint64
	tx   chainread.Tx
	err  error
}

// inBlock reports whether the endpoint has the transaction in a block.
func (a answer) inBlock() bool { return a.err == nil && a.tx.Found && a.tx.Block > 0 }

// malformed reports whether err says the node answered what the chain's
// own bytes do not bear out, as opposed to not answering.
func malformed(err error) bool {
	return errors.Is(err, chainread.ErrMalformed) || errors.Is(err, chainread.ErrSlotMismatch)
}

// compare finds where the endpoints' answers about transaction ref
// disagree (KindEndpoints: its existence, block, payload, sender or
// outcome; an answer that does not bear out) or could not be had
// (KindUnread), and returns the answers that were had.
func (s *session) compare(ref string, as []answer) []answer {
	var good, bad []answer
	for _, a := range as {
		if a.err == nil {
			good = append(good, a)
		} else {
			bad = append(bad, a)
		}
	}
	if len(good) == 0 {
		var why []string
		for _, a := range bad {
			why = append(why, a.err.Error())
		}
		s.r.find(KindUnread, s.chain, "cannot read tx %s, sent by or listed for %s: %s", ref, s.address, strings.Join(why, "; "))
		return nil
	}
	for _, a := range bad {
		if malformed(a.err) {
			s.r.find(KindEndpoints, s.chain, "%s answers tx %s with what the chain's own bytes do not bear out (%v); %s reads it", a.ep.name, ref, a.err, good[0].ep.name)
		} else {
			s.r.find(KindUnread, s.chain, "%s: cannot read tx %s, sent by or listed for %s: %v", a.ep.name, ref, s.address, a.err)
		}
	}
	for _, a := range good[1:] {
		if why := differ(good[0], a); why != "" {
			s.r.find(KindEndpoints, s.chain, "%s and %s disagree on tx %s: %s", good[0].ep.name, a.ep.name, ref, why)
		}
	}
	return good
}

// differ says how two endpoints' answers about one transaction disagree
// ("" when they do not). An endpoint whose head is below the block the
// other places it in is behind, not in disagreement.
func differ(a, b answer) string {
	if a.inBlock() != b.inBlock() {
		has, lacks := a, b
		if b.inBlock() {
			has, lacks = b, a
		}
		if has.tx.Block > lacks.head {
			return ""
		}
		return fmt.Sprintf("%s has it in block %d, %s (at block %d) does not (%s)", has.ep.name, has.tx.Block, lacks.ep.name, lacks.head, lacks.tx.Detail)
	}
	if !a.inBlock() {
		return ""
	}
	var why []string
	if a.tx.Block != b.tx.Block || !strings.EqualFold(a.tx.BlockHash, b.tx.BlockHash) {
		why = append(why, fmt.Sprintf("block %d (%s) or %d (%s)", a.tx.Block, a.tx.BlockHash, b.tx.Block, b.tx.BlockHash))
	}
	if !a.tx.BlockTime.IsZero() && !b.tx.BlockTime.IsZero() && !a.tx.BlockTime.Equal(b.tx.BlockTime) {
		why = append(why, fmt.Sprintf("block time %s or %s", a.tx.BlockTime.Format("2006-01-02T15:04:05Z"), b.tx.BlockTime.Format("2006-01-02T15:04:05Z")))
	}
	if a.tx.Sender != b.tx.Sender {
		why = append(why, fmt.Sprintf("sender %s or %s", a.tx.Sender, b.tx.Sender))
	}
	if !samePayloads(a.tx.Payloads, b.tx.Payloads) {
		why = append(why, "its payload")
	}
	if a.tx.Succeeded != b.tx.Succeeded {
		why = append(why, fmt.Sprintf("its outcome (succeeded: %t or %t)", a.tx.Succeeded, b.tx.Succeeded))
	}
	return strings.Join(why, "; ")
}

func samePayloads(a, b [][]byte) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if string(a[i]) != string(b[i]) {
			return false
		}
	}
	return true
}
