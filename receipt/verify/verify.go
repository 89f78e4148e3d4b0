// Package verify checks a keeper receipt against the chains themselves,
// trusting only what the caller pinned: the log's trust root (package
// evlog/trust: its key and the accounts allowed to anchor it), or its key
// and accounts in the short form. With nothing pinned it fails (CheckTrust)
// unless the caller asks, by Options.InsecureTrustReceipt, to check the
// receipt against its own key and accounts, and then every Result says so.
//
// For a version 3 receipt: the checkpoint's signature by the pinned key,
// the evidence's inclusion in it, and per anchor that the checkpoint it
// committed to holds the evidence and is extended by the receipt's; then,
// over each chain's public JSON-RPC, that the node is on the receipt's
// network, that the transaction exists, commits to that checkpoint, was
// sent by an account the trust root lists for that network and size (the
// sender recovered from the transaction's signature), succeeded, is final,
// sits in the receipt's block, and that the block's time on chain is the
// receipt's. Versions 1 and 2 prove a leaf of a batch root instead. Given
// several endpoints for a chain, every one is asked and all must agree. The
// trust model is in docs/receipts.md. It depends on nothing of keeper's
// server: other Go programs import it to check receipts they were handed
// (`keeper verify` is one of them).
package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keeperhq/keeper/chainread"
	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
	"github.com/keeperhq/keeper/internal/redact"
	"github.com/keeperhq/keeper/receipt"
)

// The checks, in the order they are made. A Result that failed names one.
const (
	CheckFormat      = "format"      // the receipt parses strictly (exact keys, none twice, none unknown, nothing after it)
	CheckTrust       = "trust"       // the verifier pinned a trust root or a log key (or chose InsecureTrustReceipt), strictly parsed; an update extends it
	CheckDigest      = "digest"      // the original file hashes to the receipt's digest
	CheckCheckpoint  = "checkpoint"  // v3: the log's key signed the receipt's checkpoint, whose origin is the key's
	CheckWitnesses   = "witnesses"   // v3: the checkpoint carries the quorum of cosignatures the trust root asks for at its size, by listed witnesses
	CheckInclusion   = "inclusion"   // v3: the evidence's entry is in that checkpoint at the receipt's index
	CheckProof       = "proof"       // v1, v2 and v3 batch anchors: leaf, index, path and root fit together
	CheckSize        = "size"        // v3: the anchored checkpoint holds the entry (tree_size > index)
	CheckConsistency = "consistency" // v3: the receipt's checkpoint extends the anchored one
	CheckChain       = "chain"       // the verifier can read this chain at all
	CheckNetwork     = "network"     // every endpoint is on the anchor's network (v2, v3)
	CheckEndpoints   = "endpoints"   // every endpoint asked says the same of the transaction
	CheckTransaction = "transaction" // the node has the transaction; it hashes to tx_ref, is replay-protected for the network, its signatures verify
	CheckPayload     = "payload"     // the transaction carries the anchor's root (v3: its checkpoint, by this log's key)
	CheckAccount     = "account"     // the sender (signed and paid for the transaction) is the anchor's account, and one the trust root lists
	CheckBatch       = "batch"       // a batch anchor's block is before the log began, from an account listed from size 0 and not retired by then
	CheckStatus      = "status"      // it succeeded
	CheckFinality    = "finality"    // its block is final
	CheckBlock       = "block"       // it is in the anchor's block (number and, v2 and v3, hash); the EVM header rehashes to it, the Solana block lists it
	CheckTime        = "time"        // the block's time on chain is the anchor's block_time (and the receipt's existed_by the earliest)
)

// Checks are every check, in the order they are made
// (conformance/README.md).
var Checks = []string{CheckFormat, CheckTrust, CheckDigest, CheckCheckpoint, CheckWitnesses, CheckInclusion, CheckProof, CheckSize, CheckConsistency,
	CheckChain, CheckNetwork, CheckTransaction, CheckEndpoints, CheckPayload, CheckAccount, CheckBatch, CheckStatus, CheckFinality,
	CheckBlock, CheckTime}

// Options say where to ask and whom to trust. Trust (or LogKey) pins whom
// to trust; with neither, every Result fails with CheckTrust unless
// InsecureTrustReceipt is set.
type Options struct {
	// RPC maps a chain name to its JSON-RPC endpoint.
	RPC map[string]string
	// Endpoints maps a chain name to several endpoints, asked with RPC's:
	// every one must answer, and all must agree on the transaction, its
	// block, block hash and block time, its payload, its sender and its
	// outcome. A chain with no
	// endpoint in either fails with CheckChain.
	Endpoints map[string][]string
	// Trust is the log's trust root, pinned by whoever verifies (a file
	// they keep, or /log/trust fetched once): the log's key, which must
	// have signed a version 3 receipt's checkpoint, and the accounts that
	// may anchor it, per network and tree size.
	Trust *trust.Root
	// LogKey and Accounts are the short form of Trust (trust.ShortForm):
	// the log's verifier key (note vkey, as /log/key serves it) and its
	// anchoring accounts as CHAIN=ADDRESS or CAIP-10 ids. With Trust set,
	// LogKey must be Trust's key and Accounts are not read.
	LogKey   string
	Accounts []string
	// InsecureTrustReceipt checks a receipt with nothing pinned against the
	// key and accounts it names itself. That proves only that the receipt
	// agrees with itself and with the chains: anyone can make such a
	// receipt for a log of their own. Every Result then says so in
	// Warning. Ignored when Trust, LogKey or Accounts is set.
	InsecureTrustReceipt bool
	// Caller reaches an endpoint (nil: JSON-RPC over HTTP; the /verify page
	// passes the browser's fetch).
	Caller func(url string) chainread.Caller
	// Clocks are the networks whose block times this verifier trusts for
	// the time bound, beside DefaultClocks: testnets, local chains, a chain
	// the verifier runs; each a CAIP-2 id, or a chain name ("etherlink",
	// "solana") for whatever network its endpoints are on. An anchor on any other network
	// still verifies, but its time proves nothing to this verifier.
	Clocks []string
	// Lookups replaces how a chain is read, by chain name (tests, other
	// chains): a chain named here is asked through it, by URL.
	Lookups map[string]Lookup
	// Timeout bounds each anchor's lookups; default 30 s.
	Timeout time.Duration
}

// endpoints are the URLs to ask about chain, RPC's first, without repeats.
func (o Options) endpoints(chain string) []string {
	var out []string
	for _, u := range append([]string{o.RPC[chain]}, o.Endpoints[chain]...) {
		if u != "" && !slices.Contains(out, u) {
			out = append(out, u)
		}
	}
	return out
}

// Result is the outcome for one anchor of a receipt.
type Result struct {
	Chain   string `json:"chain"`
	Network string `json:"network,omitempty"` // the anchor's network, or the node's for a v1 receipt
	OK      bool   `json:"ok"`
	Check   string `json:"check,omitempty"`  // the check that failed (one of the Check constants)
	Reason  string `json:"reason,omitempty"` // why it failed
	Detail  string `json:"detail,omitempty"` // what was checked, when OK
	// Time is the anchor's block time as the chain states it, checked
	// against the receipt's (when OK).
	Time time.Time `json:"time,omitzero"`
	// Clock says the verifier trusts Network's clock (DefaultClocks or
	// Options.Clocks), so Time bounds when the evidence existed.
	Clock bool `json:"clock"`
	// Key is the log key a version 3 receipt's checkpoint was checked
	// against (note vkey: origin, key hash and key), whoever pinned it.
	Key string `json:"key,omitempty"`
	// Witnesses are the listed witnesses whose cosignatures of a version 3
	// receipt's checkpoint verified (when OK).
	Witnesses []string `json:"witnesses,omitempty"`
	// Warning says what the result rests on that the verifier did not
	// pin: InsecureWarning when the receipt was checked against itself.
	Warning string `json:"warning,omitempty"`
}

// MarshalJSON adds the network's name for people (NetworkName).
func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	name := ""
	if r.Network != "" {
		name, _ = NetworkName(r.Network)
	}
	return json.Marshal(struct {
		plain
		NetworkName string `json:"network_name,omitempty"`
	}{plain(r), name})
}

// Failed is the failure as one line: "check: reason" ("" when OK).
func (r Result) Failed() string {
	if r.OK {
		return ""
	}
	return r.Check + ": " + r.Reason
}

// InsecureWarning is Result.Warning for a receipt checked against its own
// key and accounts (Options.InsecureTrustReceipt).
const InsecureWarning = "INSECURE: nothing pinned; checked against the receipt's own log key and accounts, " +
	"which proves only that the receipt agrees with itself: anyone can make such a receipt for a log of their own"

// NothingPinned is the reason of the CheckTrust failure when the verifier
// pinned neither a trust root nor a log key.
const NothingPinned = "nothing pinned: a receipt verifies only against the log's trust root (its /log/trust, " +
	"Options.Trust) or its key and anchoring accounts (Options.LogKey, Options.Accounts), pinned by the verifier"

// Receipt checks every anchor of r and returns one Result per anchor, in the
// receipt's order: Check's Results.
func Receipt(ctx context.Context, r receipt.Receipt, o Options) []Result {
	return Check(ctx, r, o).Results
}

// logView is what the receipt's log part proved: the key its checkpoint was
// checked with, and the checkpoint.
type logView struct {
	key    evlog.Key
	head   evlog.Checkpoint
	cosigs []evlog.Cosignature
}

// checkLog makes the receipt-wide checks of a version 3 receipt: the
// checkpoint's signature by the pinned key and its origin, its witnesses'
// cosignatures (trust.Root.OpenCheckpoint), then the entry's inclusion.
func checkLog(r receipt.Receipt, p pin) (logView, string, error) {
	var v logView
	vkey := r.Log.Key
	if p.root != nil {
		vkey = p.root.Log.Key
		if vkey == "" {
			return v, CheckTrust, fmt.Errorf("no log key pinned: a version 3 receipt verifies only against the log's key (its trust root, or its key and accounts)")
		}
	}
	if vkey == "" {
		return v, CheckCheckpoint, fmt.Errorf("no log key: the receipt carries none, so pin the log's trust root or key")
	}
	key, err := evlog.ParseKey(vkey)
	if err != nil {
		return v, CheckCheckpoint, err
	}
	v.key = key
	if r.Log.Origin != key.Name {
		return v, CheckCheckpoint, fmt.Errorf("the receipt's log is %q, the key is for %q", r.Log.Origin, key.Name)
	}
	if p.root == nil {
		v.head, err = key.Open([]byte(r.Log.Checkpoint))
	} else {
		v.head, v.cosigs, err = p.root.OpenCheckpoint([]byte(r.Log.Checkpoint))
	}
	if qe := (*trust.QuorumError)(nil); errors.As(err, &qe) {
		return v, CheckWitnesses, err
	}
	if err != nil {
		return v, CheckCheckpoint, fmt.Errorf("%v (key %s)", err, shortKey(key))
	}
	if err := r.CheckInclusion(v.head); err != nil {
		return v, CheckInclusion, fmt.Errorf("entry %d is not in checkpoint %d: %v", r.Log.Index, v.head.Size, err)
	}
	return v, "", nil
}

func shortKey(k evlog.Key) string { return fmt.Sprintf("%s+%08x", k.Name, k.Hash) }

// Anchor checks one anchor of r: what the receipt proves by itself, then
// what the chain's endpoints say.
func Anchor(ctx context.Context, r receipt.Receipt, a receipt.Anchor, o Options) Result {
	p, f := o.pin()
	return anchor(ctx, r, a, o, p, f)
}

func anchor(ctx context.Context, r receipt.Receipt, a receipt.Anchor, o Options, p pin, f *failure) Result {
	res := Result{Chain: a.Chain, Network: a.Network}
	if p.insecure {
		res.Warning = InsecureWarning
	}
	var lv logView
	if f == nil {
		lv, f = offChain(r, a, p)
	}
	if lv.key.Text != "" {
		res.Key = lv.key.Text
	}
	var answers []answer
	if f == nil {
		answers, f = ask(ctx, a, o)
	}
	if f == nil {
		f = judge(a, answers, lv, p)
	}
	if f != nil {
		res.Check, res.Reason = f.check, f.reason
		return res
	}
	got := answers[0].tx
	res.OK, res.Network, res.Time, res.Clock = true, got.Network, got.BlockTime, o.trustsClock(a.Chain, got.Network)
	for _, c := range lv.cosigs {
		res.Witnesses = append(res.Witnesses, c.Witness)
	}
	agree := ""
	if len(res.Witnesses) > 0 {
		agree = "; cosigned by " + strings.Join(res.Witnesses, ", ")
	}
	if len(answers) > 1 {
		agree += fmt.Sprintf(" (%d endpoints agree)", len(answers))
	}
	where := DescribeNetwork(got.Network)
	if !res.Clock {
		where += ", a clock this verifier does not trust"
	}
	at := got.BlockTime.UTC().Format(time.RFC3339)
	if a.Kind == receipt.AnchorCheckpoint {
		res.Detail = fmt.Sprintf("%s tx %s, block %d at %s (chain time), final, sent by %s; commits to checkpoint %d, which the receipt's (%d) extends; entry %d%s",
			where, a.TxRef, got.Block, at, got.Sender, a.TreeSize, lv.head.Size, r.Log.Index, agree)
	} else {
		res.Detail = fmt.Sprintf("%s tx %s, block %d at %s (chain time), final, sent by %s; root %s… holds leaf %d of %d%s",
			where, a.TxRef, got.Block, at, got.Sender, a.Root[:16], a.LeafIndex, a.TreeSize, agree)
	}
	return res
}

// failure is a failed check and why.
type failure struct{ check, reason string }

func failed(check, format string, args ...any) *failure {
	return &failure{check: check, reason: fmt.Sprintf(format, args...)}
}

// offChain makes the checks that need no chain: a version 3 receipt's log
// checks, then the anchor's consistency with its checkpoint (or a batch
// anchor's proof).
func offChain(r receipt.Receipt, a receipt.Anchor, p pin) (logView, *failure) {
	var lv logView
	if r.Version == receipt.Version {
		if r.Log == nil {
			return lv, failed(CheckCheckpoint, "a version 3 receipt without its log part")
		}
		var check string
		var err error
		if lv, check, err = checkLog(r, p); err != nil {
			return lv, failed(check, "%v", err)
		}
	}
	if a.Kind != receipt.AnchorCheckpoint {
		if err := r.CheckProof(a); err != nil {
			return lv, failed(CheckProof, "%v (digest, leaf index, path and root do not fit together)", err)
		}
		return lv, nil
	}
	if uint64(a.TreeSize) <= r.Log.Index {
		return lv, failed(CheckSize, "the anchored checkpoint has %d entries; the evidence is entry %d", a.TreeSize, r.Log.Index)
	}
	if err := a.CheckConsistency(lv.head); err != nil {
		return lv, failed(CheckConsistency, "%v (the receipt's checkpoint does not extend the anchored one)", err)
	}
	return lv, nil
}

// ask asks every endpoint of the anchor's chain about its transaction. Each
// must answer, from the anchor's network, and all must agree.
func ask(ctx context.Context, a receipt.Anchor, o Options) ([]answer, *failure) {
	lookup, ok := o.Lookups[a.Chain]
	if !ok {
		lookup, ok = o.reader(a.Chain)
	}
	if !ok {
		if a.Chain == "stub" {
			return nil, failed(CheckChain, "stub anchors live only inside the keeper process that made them; there is no chain to check")
		}
		return nil, failed(CheckChain, "this verifier does not know chain %q", a.Chain)
	}
	urls := o.endpoints(a.Chain)
	if len(urls) == 0 {
		return nil, failed(CheckChain, "no RPC endpoint given for %s", a.Chain)
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	answers := askAll(ctx, lookup, urls, a.TxRef)
	for _, an := range answers {
		got, err, name := an.tx, an.err, an.name // the name, not the URL: providers put API keys in URLs
		switch {
		case err != nil && got.Network == "":
			return nil, failed(CheckTransaction, "could not read %s from %s: %v", a.TxRef, name, err)
		case a.Network != "" && got.Network != a.Network:
			return nil, failed(CheckNetwork, "the node at %s is on %s, the anchor is on %s", name, got.Network, a.Network)
		case errors.Is(err, chainread.ErrHeaderHash) || errors.Is(err, chainread.ErrSlotMismatch):
			return nil, failed(CheckBlock, "%s at %s: %v", a.TxRef, name, err)
		case err != nil:
			return nil, failed(CheckTransaction, "could not read %s from %s: %v", a.TxRef, name, err)
		}
	}
	if check, why := disagreement(answers); check != "" {
		return nil, failed(check, "%s", why)
	}
	return answers, nil
}

// judge checks the endpoints' (agreeing) answers against the anchor.
func judge(a receipt.Anchor, answers []answer, lv logView, p pin) *failure {
	got := answers[0].tx
	if !got.Found {
		return failed(CheckTransaction, "%s is not on %s (asked %s)", a.TxRef, got.Network, answers[0].name)
	}
	if why := payloadMismatch(a, got.Payload, got.HasPayload, lv); why != "" {
		return failed(CheckPayload, "transaction %s %s", a.TxRef, why)
	}
	if f := checkAccount(a, got, p); f != nil {
		return f
	}
	if f := checkBatch(a, got, p); f != nil {
		return f
	}
	switch {
	case !got.Succeeded:
		return failed(CheckStatus, "transaction %s failed on chain: %s", a.TxRef, got.Detail)
	}
	for _, an := range answers {
		if !an.tx.Final {
			return failed(CheckFinality, "transaction %s is included (block %d) but not final yet at %s: %s", a.TxRef, an.tx.Block, an.name, an.tx.Detail)
		}
	}
	switch {
	case a.Block != 0 && got.Block != a.Block:
		return failed(CheckBlock, "transaction %s is in block %d, the receipt says %d", a.TxRef, got.Block, a.Block)
	case a.BlockHash != "" && got.BlockHash != a.BlockHash:
		return failed(CheckBlock, "block %d's hash is %s, the receipt says %s", got.Block, got.BlockHash, a.BlockHash)
	case got.BlockTime.IsZero():
		return failed(CheckTime, "%s states no time for block %d", got.Network, got.Block)
	case !a.BlockTime.Equal(got.BlockTime):
		return failed(CheckTime, "block %d's time on %s is %s, the receipt's block_time is %s",
			got.Block, got.Network, got.BlockTime.UTC().Format(time.RFC3339), a.BlockTime.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// payloadMismatch says how the payload differs from what the anchor
// committed to ("" when it does not): a checkpoint anchor's payload must
// name the log's key, the anchor's size and root; any other anchor's must
// be its batch root.
func payloadMismatch(a receipt.Anchor, p receipt.Payload, got bool, lv logView) string {
	root, _ := a.RootBytes() // Parse checked it
	if !got {
		return "carries no keeper anchor payload, byte for byte"
	}
	if a.Kind != receipt.AnchorCheckpoint {
		if p.Checkpoint != nil || p.Root != root {
			return fmt.Sprintf("carries %s, the receipt says batch root %s", describe(p), a.Root)
		}
		return ""
	}
	want := receipt.CheckpointRef{KeyHash: lv.key.Hash, Size: uint64(a.TreeSize), Root: root}
	if p.Checkpoint == nil || *p.Checkpoint != want {
		return fmt.Sprintf("carries %s, the receipt says checkpoint %d with root %s of the log whose key hash is %08x",
			describe(p), a.TreeSize, a.Root, lv.key.Hash)
	}
	return ""
}

func describe(p receipt.Payload) string {
	if p.Checkpoint == nil {
		return fmt.Sprintf("batch root %x", p.Root)
	}
	return fmt.Sprintf("checkpoint %d with root %x of the log whose key hash is %08x", p.Checkpoint.Size, p.Root, p.Checkpoint.KeyHash)
}

// answer is one endpoint's lookup.
type answer struct {
	name string // the endpoint, redacted, and its place when there are several
	tx   Tx
	err  error
}

// askAll asks every endpoint at once.
func askAll(ctx context.Context, lookup Lookup, urls []string, ref string) []answer {
	out := make([]answer, len(urls))
	var wg sync.WaitGroup
	for i, u := range urls {
		out[i].name = redact.Endpoint(u)
		if len(urls) > 1 {
			out[i].name = fmt.Sprintf("endpoint %d (%s)", i+1, out[i].name)
		}
		wg.Go(func() {
			out[i].tx, out[i].err = lookup(ctx, u, ref)
			if t := &out[i].tx; !t.HasPayload && t.Root != ([32]byte{}) {
				t.Payload, t.HasPayload = receipt.Payload{Root: t.Root}, true // a Lookup that fills only Root, as before payloads
			}
		})
	}
	wg.Wait()
	return out
}

// disagreement names the first two endpoints whose answers differ in what
// the receipt rests on: whether the transaction exists, its block and
// block hash, its payload, its sender and its outcome.
func disagreement(answers []answer) (check, why string) {
	first := answers[0]
	for _, an := range answers[1:] {
		a, b := first.tx, an.tx
		var what, x, y string
		switch {
		case a.Found != b.Found:
			what, x, y = "the transaction", foundWord(a.Found), foundWord(b.Found)
		case a.Block != b.Block:
			what, x, y = "its block", fmt.Sprint(a.Block), fmt.Sprint(b.Block)
		case a.BlockHash != b.BlockHash:
			what, x, y = "its block hash", a.BlockHash, b.BlockHash
		case a.HasPayload != b.HasPayload || !samePayload(a.Payload, b.Payload):
			what, x, y = "its payload", describe(a.Payload), describe(b.Payload)
		case a.Sender != b.Sender:
			what, x, y = "its sender", a.Sender, b.Sender
		case a.Succeeded != b.Succeeded:
			what, x, y = "its outcome", succeededWord(a.Succeeded), succeededWord(b.Succeeded)
		case !a.BlockTime.Equal(b.BlockTime):
			what, x, y = "its block's time", a.BlockTime.UTC().Format(time.RFC3339), b.BlockTime.UTC().Format(time.RFC3339)
		default:
			continue
		}
		return CheckEndpoints, fmt.Sprintf("%s and %s disagree on %s: %s says %s, %s says %s", first.name, an.name, what, first.name, x, an.name, y)
	}
	return "", ""
}

func samePayload(a, b receipt.Payload) bool {
	if (a.Checkpoint == nil) != (b.Checkpoint == nil) {
		return false
	}
	return a.Root == b.Root && (a.Checkpoint == nil || *a.Checkpoint == *b.Checkpoint)
}

func foundWord(found bool) string {
	if found {
		return "it exists"
	}
	return "it does not exist"
}

func succeededWord(ok bool) string {
	if ok {
		return "it succeeded"
	}
	return "it failed"
}

// File checks that the original file hashes (SHA-256) to the receipt's
// digest; a mismatch is a CheckDigest failure.
func File(r receipt.Receipt, file io.Reader) error {
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return fmt.Errorf("%s: cannot read the file: %w", CheckDigest, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != strings.ToLower(r.Digest) {
		return fmt.Errorf("%s: the file hashes to %s, the receipt's digest is %s", CheckDigest, got, r.Digest)
	}
	return nil
}

// reader is how chain is read when Options.Lookups does not name it: its
// Reader, through Options.Caller (nil: HTTP).
func (o Options) reader(chain string) (Lookup, bool) {
	read, ok := Readers[chain]
	if !ok {
		return nil, false
	}
	caller := o.Caller
	if caller == nil {
		caller = httpCaller
	}
	return func(ctx context.Context, url, ref string) (Tx, error) {
		c := caller(url)
		if c == nil {
			return Tx{}, fmt.Errorf("no way to reach %s here", redact.Endpoint(url))
		}
		return read(ctx, c, ref)
	}, true
}
