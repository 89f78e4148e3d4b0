// Package trust is the trust root a verifier of keeper's receipts pins
// (docs/trust.md): one versioned JSON document, shaped like Sigstore's
// trusted_root.json, that names the evidence log (its origin and verifier
// key) and the accounts allowed to anchor it, per network (CAIP-10), with
// the tree sizes and times each one covers, and the witnesses that cosign
// its checkpoints (c2sp.org/tlog-witness) with the quorum of them a
// checkpoint needs from a tree size on.
//
// A receipt verifies only against what the root lists: its checkpoint must
// be signed by the root's key and cosigned by the quorum of listed
// witnesses its size needs (OpenCheckpoint, the one definition every
// verifier and the audit call), and every anchor must have been sent by an
// account the root lists for the anchor's network and tree size. A
// deployment's root only grows: an account that is rotated out gets an end
// to its ranges, a new one is appended, nothing is removed; a witness is
// retired at a size the same way, and a quorum is never lowered (Extends
// checks this). keeper serves its root at /log/trust as a note signed by the log's
// key (Sign, Open) and prints it with `keeper log trust`.
//
// The package depends on nothing of keeper's server: verifiers and monitors
// import it.
package trust

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/strictjson"
)

// MediaType names the format and its version; a root carrying another is
// refused. Version 2 lists witnesses and the quorum of their cosignatures a
// checkpoint needs; version 1 (MediaTypeV1) has no quorum and is still read.
const MediaType = "application/vnd.keeper.trustroot+json;version=2"

// MediaTypeV1 is the first version: witnesses as keys with a quorum that
// had to be 0. A root of that version is read, and written back as it came.
const MediaTypeV1 = "application/vnd.keeper.trustroot+json;version=1"

// Root is a trust root.
type Root struct {
	MediaType string    `json:"mediaType"`
	Log       Log       `json:"log"`
	Accounts  []Account `json:"accounts"`
	Witnesses Witnesses `json:"witnesses"`
}

// Log names the evidence log: its origin (the first line of its
// checkpoints) and its verifier key (note vkey, as /log/key serves it).
type Log struct {
	Origin   string    `json:"origin"`
	Key      string    `json:"key"`
	ValidFor TimeRange `json:"validFor"`
}

// Account is one anchoring account on one network.
type Account struct {
	// ID is the account in CAIP-10 form: "<CAIP-2 network>:<address>"
	// ("eip155:42793:0xAbC…", "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp:<base58>").
	ID string `json:"id"`
	// Chain is keeper's name for the chain ("etherlink", "solana"), as
	// receipts' anchors spell it.
	Chain string `json:"chain"`
	// Sizes are the tree sizes the account's checkpoint anchors may commit
	// to: from Start, up to but not including End (none: open).
	Sizes SizeRange `json:"sizes"`
	// ValidFor is when the account anchored (informative: sizes decide).
	ValidFor TimeRange `json:"validFor"`

	anyNetwork bool // the short form: Chain=address, on whatever network
}

// SizeRange is [Start, End) of tree sizes; End nil is open.
type SizeRange struct {
	Start uint64  `json:"start"`
	End   *uint64 `json:"end,omitempty"`
}

// Holds reports whether size is in the range.
func (s SizeRange) Holds(size uint64) bool {
	return size >= s.Start && (s.End == nil || size < *s.End)
}

// TimeRange is [Start, End) in time; End nil is open.
type TimeRange struct {
	Start time.Time  `json:"start"`
	End   *time.Time `json:"end,omitempty"`
}

// Witnesses are the log's witnesses (c2sp.org/tlog-witness) and how many
// of them must cosign a checkpoint (c2sp.org/tlog-cosignature) for a
// verifier to take it.
type Witnesses struct {
	// List names each witness and the tree sizes its cosignatures count
	// for: a witness is retired at a size (Sizes.End), never removed.
	List []Witness `json:"list"`
	// Quorum is how many listed witnesses must cosign a checkpoint, from a
	// tree size on: steps by growing size, each asking for at least as many
	// as the one before. Below the first step none is asked for, so a
	// quorum added later fails no receipt of the sizes before it.
	Quorum []QuorumStep `json:"quorum"`

	v1Keys []string // a version 1 root's keys, never enforced
}

// Witness is one witness: its name (the name its cosignature lines carry)
// and cosignature key (a vkey of type 0x04, evlog.ParseWitnessKey), and the
// checkpoint sizes its cosignatures count for.
type Witness struct {
	Name  string    `json:"name"`
	Key   string    `json:"key"`
	Sizes SizeRange `json:"sizes"`
}

// QuorumStep asks for Witnesses cosignatures on every checkpoint of From
// entries or more (up to the next step).
type QuorumStep struct {
	From      uint64 `json:"from"`
	Witnesses int    `json:"witnesses"`
}

// v1Witnesses is version 1's witnesses object.
type v1Witnesses struct {
	Keys   []string `json:"keys"`
	Quorum int      `json:"quorum"`
}

// v1Root is a version 1 root as it is written.
type v1Root struct {
	MediaType string      `json:"mediaType"`
	Log       Log         `json:"log"`
	Accounts  []Account   `json:"accounts"`
	Witnesses v1Witnesses `json:"witnesses"`
}

// Network is the account's CAIP-2 network ("" in the short form).
func (a Account) Network() string {
	if a.anyNetwork {
		return ""
	}
	n, _, _ := SplitCAIP10(a.ID)
	return n
}

// Address is the account's address as its chain spells it.
func (a Account) Address() string {
	if a.anyNetwork {
		return a.ID
	}
	_, addr, _ := SplitCAIP10(a.ID)
	return addr
}

// String is the account as a verifier prints it.
func (a Account) String() string {
	end := "…"
	if a.Sizes.End != nil {
		end = fmt.Sprint(*a.Sizes.End - 1)
	}
	if a.anyNetwork {
		return fmt.Sprintf("%s=%s (any size, pinned by --account)", a.Chain, a.ID)
	}
	return fmt.Sprintf("%s (sizes %d–%s)", a.ID, a.Sizes.Start, end)
}

// SplitCAIP10 splits a CAIP-10 account id into its CAIP-2 network and its
// address.
func SplitCAIP10(id string) (network, address string, err error) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 || i == len(id)-1 {
		return "", "", fmt.Errorf("trust: account %q is not CAIP-10 (<namespace>:<reference>:<address>)", id)
	}
	network, address = id[:i], id[i+1:]
	ns, ref, ok := strings.Cut(network, ":")
	if !ok || ns == "" || ref == "" || strings.Contains(ref, ":") {
		return "", "", fmt.Errorf("trust: account %q is not CAIP-10 (<namespace>:<reference>:<address>)", id)
	}
	return network, address, nil
}

// CAIP10 is the CAIP-10 id of address on network.
func CAIP10(network, address string) string { return network + ":" + address }

// Parse reads a trust root and checks its shape: the media type, the log's
// key (for the log's origin), every account's CAIP-10 id and ranges, and
// the witnesses and their quorum.
//
// It is strict, as every verifier and the audit read roots alike
// (conformance/README.md): keys match exactly (case-sensitive), none twice,
// none unknown, and nothing follows the object.
func Parse(data []byte) (Root, error) {
	var head struct {
		MediaType string `json:"mediaType"`
	}
	_ = json.Unmarshal(data, &head) // only to choose the version: the strict read below judges the text
	if head.MediaType == MediaTypeV1 {
		var v1 v1Root
		if err := strictjson.DecodeAs("the trust root", data, &v1); err != nil {
			return Root{}, fmt.Errorf("trust: not a trust root: %s", err.Message)
		}
		if v1.Witnesses.Quorum != 0 {
			return Root{}, fmt.Errorf("trust: witnesses.quorum %d: a version 1 root asks for no cosignature; "+
				"a root that needs witnesses is version 2 (%s)", v1.Witnesses.Quorum, MediaType)
		}
		r := Root{MediaType: v1.MediaType, Log: v1.Log, Accounts: v1.Accounts}
		r.Witnesses.v1Keys = v1.Witnesses.Keys
		return r, r.Check()
	}
	var r Root
	if err := strictjson.DecodeAs("the trust root", data, &r); err != nil {
		return Root{}, fmt.Errorf("trust: not a trust root: %s", err.Message)
	}
	return r, r.Check()
}

// Check validates a root.
func (r Root) Check() error {
	if r.MediaType != MediaType && r.MediaType != MediaTypeV1 {
		return fmt.Errorf("trust: mediaType %q: this verifier reads %q (and version 1)", r.MediaType, MediaType)
	}
	k, err := evlog.ParseKey(r.Log.Key)
	if err != nil {
		return fmt.Errorf("trust: log.key: %w", err)
	}
	if k.Name != r.Log.Origin {
		return fmt.Errorf("trust: log.key is for %q, log.origin is %q", k.Name, r.Log.Origin)
	}
	for i, a := range r.Accounts {
		if a.anyNetwork { // the short form: ParseAccount checked it
			continue
		}
		if _, _, err := SplitCAIP10(a.ID); err != nil {
			return fmt.Errorf("trust: accounts[%d].id: %w", i, err)
		}
		if a.Chain == "" {
			return fmt.Errorf("trust: accounts[%d].chain: empty (etherlink, solana)", i)
		}
		if a.Sizes.End != nil && *a.Sizes.End <= a.Sizes.Start {
			return fmt.Errorf("trust: accounts[%d].sizes: end %d is not after start %d", i, *a.Sizes.End, a.Sizes.Start)
		}
	}
	for i, w := range r.Witnesses.v1Keys {
		if _, err := evlog.ParseKey(w); err != nil {
			return fmt.Errorf("trust: witnesses.keys[%d]: %w", i, err)
		}
	}
	return r.Witnesses.check(k)
}

// check validates the witnesses: each key a cosignature key of the name
// given, no name twice, ranges that end after they start; quorum steps by
// growing size that never ask for fewer, nor for more witnesses than are
// listed at any size the step covers.
func (ws Witnesses) check(log evlog.Key) error {
	names := map[string]bool{}
	for i, w := range ws.List {
		k, err := evlog.ParseWitnessKey(w.Key)
		if err != nil {
			return fmt.Errorf("trust: witnesses.list[%d].key: %w", i, err)
		}
		switch {
		case k.Name != w.Name:
			return fmt.Errorf("trust: witnesses.list[%d]: its key is for %q, its name is %q", i, k.Name, w.Name)
		case names[w.Name]:
			return fmt.Errorf("trust: witnesses.list[%d]: %q is listed twice", i, w.Name)
		case w.Name == log.Name:
			return fmt.Errorf("trust: witnesses.list[%d]: %q is the log's own name", i, w.Name)
		case w.Sizes.End != nil && *w.Sizes.End <= w.Sizes.Start:
			return fmt.Errorf("trust: witnesses.list[%d].sizes: end %d is not after start %d", i, *w.Sizes.End, w.Sizes.Start)
		}
		names[w.Name] = true
	}
	for i, q := range ws.Quorum {
		if q.Witnesses < 0 {
			return fmt.Errorf("trust: witnesses.quorum[%d].witnesses: %d is negative", i, q.Witnesses)
		}
		if i > 0 {
			prev := ws.Quorum[i-1]
			if q.From <= prev.From {
				return fmt.Errorf("trust: witnesses.quorum[%d].from: %d is not after the step before's %d", i, q.From, prev.From)
			}
			if q.Witnesses < prev.Witnesses {
				return fmt.Errorf("trust: witnesses.quorum[%d].witnesses: %d is fewer than the %d asked for before: a quorum is never lowered", i, q.Witnesses, prev.Witnesses)
			}
		}
	}
	// Every size at which what counts can change: a quorum no checkpoint
	// of that size can meet would fail every receipt there.
	for _, size := range ws.boundaries() {
		if need, have := ws.QuorumAt(size), len(ws.At(size)); need > have {
			return fmt.Errorf("trust: witnesses: checkpoints of %d entries need %d cosignatures, and %d witnesses are listed for that size", size, need, have)
		}
	}
	return nil
}

// boundaries are the sizes where a witness's range or a quorum step begins
// or ends.
func (ws Witnesses) boundaries() []uint64 {
	var out []uint64
	for _, w := range ws.List {
		out = append(out, w.Sizes.Start)
		if w.Sizes.End != nil {
			out = append(out, *w.Sizes.End)
		}
	}
	for _, q := range ws.Quorum {
		out = append(out, q.From)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// QuorumAt is how many cosignatures a checkpoint of size entries needs.
func (ws Witnesses) QuorumAt(size uint64) int {
	n := 0
	for _, q := range ws.Quorum {
		if size >= q.From {
			n = q.Witnesses
		}
	}
	return n
}

// At are the witnesses whose cosignatures count for a checkpoint of size
// entries.
func (ws Witnesses) At(size uint64) []Witness {
	var out []Witness
	for _, w := range ws.List {
		if w.Sizes.Holds(size) {
			out = append(out, w)
		}
	}
	return out
}

// OpenCheckpoint is the one definition of a checkpoint a verifier takes (every
// verifier of receipts and the audit call it): signed by the log's key,
// with an origin that is the key's, and cosigned by the quorum the root
// asks for at its size, each cosignature by a distinct witness the root
// lists for that size. A cosignature line by a listed witness that does not
// verify refuses the checkpoint; lines by anyone else are ignored. Errors
// are *QuorumError when the log's signature holds and the cosignatures do
// not.
func (r Root) OpenCheckpoint(signed []byte) (evlog.Checkpoint, []evlog.Cosignature, error) {
	key, err := r.Key()
	if err != nil {
		return evlog.Checkpoint{}, nil, err
	}
	c, err := key.Open(signed)
	if err != nil {
		return evlog.Checkpoint{}, nil, err
	}
	listed := r.Witnesses.At(c.Size)
	need := r.Witnesses.QuorumAt(c.Size)
	keys := make([]evlog.WitnessKey, 0, len(listed))
	for _, w := range listed {
		k, err := evlog.ParseWitnessKey(w.Key)
		if err != nil {
			return c, nil, err // Check refused it already
		}
		keys = append(keys, k)
	}
	_, cosigs, err := evlog.OpenCosigned(signed, key, keys)
	if err != nil {
		return c, nil, &QuorumError{Size: c.Size, Need: need, Listed: names(listed), Reason: err.Error()}
	}
	if len(cosigs) < need {
		var got []string
		for _, s := range cosigs {
			got = append(got, s.Witness)
		}
		return c, cosigs, &QuorumError{Size: c.Size, Need: need, Listed: names(listed), Got: got}
	}
	return c, cosigs, nil
}

func names(ws []Witness) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.Name)
	}
	return out
}

// QuorumError is a checkpoint without the cosignatures its size needs.
type QuorumError struct {
	Size   uint64
	Need   int
	Listed []string // the witnesses that count at Size
	Got    []string // the ones whose cosignatures verify
	Reason string   // a cosignature by a listed witness that does not verify
}

func (e *QuorumError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("checkpoint %d: a listed witness's cosignature does not verify: %s", e.Size, e.Reason)
	}
	got := "none"
	if len(e.Got) > 0 {
		got = strings.Join(e.Got, ", ")
	}
	return fmt.Sprintf("checkpoint %d carries %d valid cosignatures (%s) of the witnesses the trust root lists for its size (%s); it needs %d",
		e.Size, len(e.Got), got, strings.Join(e.Listed, ", "), e.Need)
}

// Key is the log's verifier key.
func (r Root) Key() (evlog.Key, error) { return evlog.ParseKey(r.Log.Key) }

// Marshal writes the root as indented JSON ending in a newline, with no
// blank line (so it can be the text of a signed note), in its version's
// shape.
func (r Root) Marshal() []byte {
	if r.Accounts == nil {
		r.Accounts = []Account{}
	}
	var v any = r
	if r.MediaType == MediaTypeV1 {
		v = v1Root{MediaType: r.MediaType, Log: r.Log, Accounts: r.Accounts,
			Witnesses: v1Witnesses{Keys: append([]string{}, r.Witnesses.v1Keys...)}}
	} else {
		if r.Witnesses.List == nil {
			r.Witnesses.List = []Witness{}
		}
		if r.Witnesses.Quorum == nil {
			r.Witnesses.Quorum = []QuorumStep{}
		}
		v = r
	}
	b, _ := json.MarshalIndent(v, "", "  ") // plain data: cannot fail
	return append(b, '\n')
}

// New is the root of a log with no account listed yet.
func New(logKey string, since time.Time) (Root, error) {
	k, err := evlog.ParseKey(logKey)
	if err != nil {
		return Root{}, err
	}
	return Root{MediaType: MediaType, Log: Log{Origin: k.Name, Key: k.Text, ValidFor: TimeRange{Start: since.UTC()}}}, nil
}

// ShortForm is the root a verifier builds from a pinned log key and
// accounts given as CHAIN=ADDRESS (any network of that chain, any size) or
// as CAIP-10 ids (that network, any size): `keeper verify --log-key …
// --account etherlink=0x…`.
func ShortForm(logKey string, accounts []string) (Root, error) {
	r, err := New(logKey, time.Time{})
	if err != nil {
		return Root{}, err
	}
	for _, s := range accounts {
		a, err := parseShortAccount(s)
		if err != nil {
			return Root{}, err
		}
		r.Accounts = append(r.Accounts, a)
	}
	return r, nil
}

// ParseAccount reads one account of the short form: CHAIN=ADDRESS (any
// network of that chain, any size) or a CAIP-10 id (that network, any
// size).
func ParseAccount(s string) (Account, error) { return parseShortAccount(s) }

func parseShortAccount(s string) (Account, error) {
	s = strings.TrimSpace(s)
	if chain, addr, ok := strings.Cut(s, "="); ok {
		if chain == "" || addr == "" {
			return Account{}, fmt.Errorf("trust: account %q: write CHAIN=ADDRESS (etherlink=0x…, solana=<base58>) or a CAIP-10 id", s)
		}
		return Account{ID: addr, Chain: chain, anyNetwork: true}, nil
	}
	network, _, err := SplitCAIP10(s)
	if err != nil {
		return Account{}, fmt.Errorf("trust: account %q: write CHAIN=ADDRESS (etherlink=0x…, solana=<base58>) or a CAIP-10 id", s)
	}
	return Account{ID: s, Chain: chainOfNetwork(network)}, nil
}

// chainOfNetwork is keeper's chain name for a CAIP-2 namespace.
func chainOfNetwork(network string) string {
	switch {
	case strings.HasPrefix(network, "eip155:"):
		return "etherlink"
	case strings.HasPrefix(network, "solana:"):
		return "solana"
	}
	return ""
}

// Allows reports whether the root lets address anchor a checkpoint of size
// entries on network (chain is keeper's name for it), and if not, why.
// size < 0 asks about an anchor of a batch root made before the log, which
// commits to no size: any account listed for the network allows it.
func (r Root) Allows(chain, network, address string, size int64) (bool, string) {
	listed := r.On(chain, network)
	if len(listed) == 0 {
		return false, fmt.Sprintf("the pinned trust root lists no anchoring account on %s (%s)", network, chain)
	}
	for _, a := range listed {
		if !SameAddress(a.Address(), address) {
			continue
		}
		if size < 0 || a.Sizes.Holds(uint64(size)) {
			return true, ""
		}
	}
	var names []string
	for _, a := range listed {
		names = append(names, a.String())
	}
	what := "an anchor"
	if size >= 0 {
		what = fmt.Sprintf("a checkpoint of %d entries", size)
	}
	return false, fmt.Sprintf("%s sent %s on %s; the pinned trust root lists %s", address, what, network, strings.Join(names, ", "))
}

// Began is when the log began (log.validFor.start): batch anchors
// (receipt versions 1 and 2, which commit to a batch's own root, not to a
// checkpoint) count only from before it. Zero for the short form, which
// states no start, so no batch anchor counts under it.
func (r Root) Began() time.Time { return r.Log.ValidFor.Start }

// AdmitBatch says why an anchor of a batch root that address sent on
// network, in a block of time at, does not count (nil when it does). A
// batch root commits to no tree size, so nothing in the log bounds who
// made it: it counts only when its block is before the log began, from an
// account listed on that network whose sizes start at 0 (one that may have
// anchored before the log) and which was not retired before the block. A
// retired or leaked key can then mint no batch receipt dated after the log
// began, and the audit reports any batch payload sent since.
func (r Root) AdmitBatch(chain, network, address string, at time.Time) error {
	began := r.Began()
	if began.IsZero() {
		return fmt.Errorf("the pinned trust says not when the log began, so no batch anchor counts (pin the log's trust root)")
	}
	if !at.Before(began) {
		return fmt.Errorf("a batch anchor in a block of %s, on or after the log began (%s): since then every anchor commits to a checkpoint",
			at.UTC().Format(time.RFC3339), began.UTC().Format(time.RFC3339))
	}
	for _, a := range r.On(chain, network) {
		if !SameAddress(a.Address(), address) || a.Sizes.Start != 0 {
			continue
		}
		if a.ValidFor.End != nil && !at.Before(*a.ValidFor.End) {
			continue
		}
		return nil
	}
	return fmt.Errorf("%s on %s is not listed from size 0 and unretired at %s, as a batch anchor's account must be",
		address, network, at.UTC().Format(time.RFC3339))
}

// On are the accounts the root lists for a network (and the short form's
// for its chain).
func (r Root) On(chain, network string) []Account {
	var out []Account
	for _, a := range r.Accounts {
		if a.anyNetwork && a.Chain == chain || !a.anyNetwork && a.Network() == network {
			out = append(out, a)
		}
	}
	return out
}

// Networks are the networks the root lists accounts on, in the order first
// listed.
func (r Root) Networks() []string {
	var out []string
	for _, a := range r.Accounts {
		if n := a.Network(); n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// SameAddress compares addresses as their chains spell them: EVM (0x hex)
// in any letter case, anything else exactly.
func SameAddress(a, b string) bool {
	if strings.HasPrefix(a, "0x") && strings.HasPrefix(b, "0x") {
		return strings.EqualFold(a, b)
	}
	return a == b
}

// List records that address anchors on network from tree size onward, as
// of at, and reports whether the root changed: nothing changes when the
// account is already open there, or was retired there (Retired says so, and
// a worker holding a retired key must not anchor). Several accounts may be
// open on one network at once (workers on several hosts, each with its own
// key); only Retire, the operator's rotation step, closes one. The first
// account of a network starts at size 0, since it may have anchored before
// it was listed.
func (r *Root) List(chain, network, address string, size uint64, at time.Time) bool {
	first := true
	for _, a := range r.Accounts {
		if a.Network() != network {
			continue
		}
		first = false
		if SameAddress(a.Address(), address) && (a.Sizes.End == nil || r.Retired(network, address)) {
			return false
		}
	}
	start := size
	if first {
		start = 0
	}
	r.Accounts = append(r.Accounts, Account{ID: CAIP10(network, address), Chain: chain,
		Sizes: SizeRange{Start: start}, ValidFor: TimeRange{Start: at.UTC()}})
	return true
}

// Retired reports whether address was listed on network and every range
// of it is closed.
func (r Root) Retired(network, address string) bool {
	listed := false
	for _, a := range r.Accounts {
		if a.Network() == network && SameAddress(a.Address(), address) {
			if a.Sizes.End == nil {
				return false
			}
			listed = true
		}
	}
	return listed
}

// Retire closes the open range of the account id (CAIP-10) at tree size,
// as of at: its anchors of checkpoints of size entries or more no longer
// verify. It is how an operator rotates a key out (`keeper log trust
// retire`); nothing is removed.
func (r *Root) Retire(id string, size uint64, at time.Time) error {
	network, address, err := SplitCAIP10(id)
	if err != nil {
		return err
	}
	for i := range r.Accounts {
		a := &r.Accounts[i]
		if a.Network() == network && SameAddress(a.Address(), address) && a.Sizes.End == nil {
			end, t := max(size, a.Sizes.Start+1), at.UTC()
			a.Sizes.End, a.ValidFor.End = &end, &t
			return nil
		}
	}
	return fmt.Errorf("trust: %s is not an open account of the root", id)
}

// Extends reports, as an error, how next fails to extend prev: the same
// log, every account of prev still listed in order and unchanged but for an
// open range that was closed, then new accounts, and witnesses only added.
func Extends(prev, next Root) error {
	if prev.Log.Origin != next.Log.Origin || prev.Log.Key != next.Log.Key {
		return errors.New("trust: the log's origin or key changed")
	}
	if len(next.Accounts) < len(prev.Accounts) {
		return fmt.Errorf("trust: %d accounts listed before, %d now: accounts are never removed", len(prev.Accounts), len(next.Accounts))
	}
	for i, p := range prev.Accounts {
		n := next.Accounts[i]
		if n.ID != p.ID || n.Chain != p.Chain || n.Sizes.Start != p.Sizes.Start || !n.ValidFor.Start.Equal(p.ValidFor.Start) {
			return fmt.Errorf("trust: accounts[%d] (%s) changed", i, p.ID)
		}
		if p.Sizes.End != nil && (n.Sizes.End == nil || *n.Sizes.End != *p.Sizes.End) {
			return fmt.Errorf("trust: accounts[%d] (%s): its closed range changed", i, p.ID)
		}
	}
	for i, n := range next.Accounts[len(prev.Accounts):] {
		if floor, ok := sizeFloor(prev, n.Network()); ok && (n.Sizes.Start == 0 || n.Sizes.Start < floor) {
			return fmt.Errorf("trust: accounts[%d] (%s) is new on %s but starts at size %d, before the %d entries the network's accounts already cover: "+
				"a new account covers only checkpoints to come", len(prev.Accounts)+i, n.ID, n.Network(), n.Sizes.Start, floor)
		}
	}
	if prev.MediaType == MediaType && next.MediaType == MediaTypeV1 {
		return errors.New("trust: a version 2 root is not extended by a version 1 root, which has no witnesses")
	}
	if next.MediaType == MediaTypeV1 {
		for _, k := range prev.Witnesses.v1Keys {
			if !slices.Contains(next.Witnesses.v1Keys, k) {
				return fmt.Errorf("trust: witness %s removed", k)
			}
		}
	}
	return extendsWitnesses(prev.Witnesses, next.Witnesses)
}

// extendsWitnesses: every witness of prev still listed in order and
// unchanged but for an open range that was closed, then new ones; prev's
// quorum steps unchanged, then new steps that never ask for fewer.
func extendsWitnesses(prev, next Witnesses) error {
	if len(next.List) < len(prev.List) {
		return fmt.Errorf("trust: %d witnesses listed before, %d now: witnesses are retired at a size, never removed", len(prev.List), len(next.List))
	}
	for i, p := range prev.List {
		n := next.List[i]
		if n.Name != p.Name || n.Key != p.Key || n.Sizes.Start != p.Sizes.Start {
			return fmt.Errorf("trust: witnesses.list[%d] (%s) changed", i, p.Name)
		}
		if p.Sizes.End != nil && (n.Sizes.End == nil || *n.Sizes.End != *p.Sizes.End) {
			return fmt.Errorf("trust: witnesses.list[%d] (%s): its closed range changed", i, p.Name)
		}
	}
	if len(next.Quorum) < len(prev.Quorum) {
		return fmt.Errorf("trust: %d quorum steps before, %d now: a quorum is never lowered or removed", len(prev.Quorum), len(next.Quorum))
	}
	for i, p := range prev.Quorum {
		if next.Quorum[i] != p {
			return fmt.Errorf("trust: witnesses.quorum[%d] changed from %d witnesses from size %d to %d from size %d: a quorum is never lowered or moved",
				i, p.Witnesses, p.From, next.Quorum[i].Witnesses, next.Quorum[i].From)
		}
	}
	if len(prev.Quorum) > 0 && len(next.Quorum) > len(prev.Quorum) {
		last, first := prev.Quorum[len(prev.Quorum)-1], next.Quorum[len(prev.Quorum)]
		if first.Witnesses < last.Witnesses {
			return fmt.Errorf("trust: witnesses.quorum[%d] asks for %d witnesses, fewer than the %d asked for before: a quorum is never lowered",
				len(prev.Quorum), first.Witnesses, last.Witnesses)
		}
	}
	return nil
}

// AddWitness lists a witness (name and cosignature key) from tree size on,
// and reports whether the root changed: a witness listed under that name
// and key and not retired changes nothing; one listed under that name with
// another key, or retired, is an error (a retired name stays retired).
func (r *Root) AddWitness(name, key string, size uint64) (bool, error) {
	k, err := evlog.ParseWitnessKey(key)
	if err != nil {
		return false, err
	}
	if k.Name != name {
		return false, fmt.Errorf("trust: witness %q: its key is for %q", name, k.Name)
	}
	for _, w := range r.Witnesses.List {
		if w.Name != name {
			continue
		}
		if w.Key != k.Text {
			return false, fmt.Errorf("trust: witness %q is listed with another key: retire it and add the new key under a new name", name)
		}
		if w.Sizes.End != nil {
			return false, fmt.Errorf("trust: witness %q was retired at size %d", name, *w.Sizes.End)
		}
		return false, nil
	}
	r.upgrade()
	r.Witnesses.List = append(slices.Clip(r.Witnesses.List), Witness{Name: name, Key: k.Text, Sizes: SizeRange{Start: size}})
	return true, nil
}

// RetireWitness closes a witness's range at tree size: its cosignatures no
// longer count for checkpoints of size entries or more. A quorum that the
// witnesses left cannot meet is refused (list another witness first).
func (r *Root) RetireWitness(name string, size uint64) error {
	for i, w := range r.Witnesses.List {
		if w.Name != name || w.Sizes.End != nil {
			continue
		}
		next := *r
		next.Witnesses.List = slices.Clone(r.Witnesses.List)
		end := max(size, w.Sizes.Start+1)
		next.Witnesses.List[i].Sizes.End = &end
		if err := next.Check(); err != nil {
			return err
		}
		*r = next
		return nil
	}
	return fmt.Errorf("trust: %q is not a listed witness that is still counted", name)
}

// RequireQuorum asks for n cosignatures on every checkpoint of size
// entries or more, and reports whether the root changed. Asking for fewer
// than the root already does is refused: a quorum is never lowered.
func (r *Root) RequireQuorum(n int, size uint64) (bool, error) {
	current := 0
	if q := r.Witnesses.Quorum; len(q) > 0 {
		current = q[len(q)-1].Witnesses
		if size <= q[len(q)-1].From {
			size = q[len(q)-1].From + 1
		}
	}
	switch {
	case n == current:
		return false, nil
	case n < current:
		return false, fmt.Errorf("trust: a quorum of %d is asked for, the trust root already asks for %d: a quorum is never lowered", n, current)
	}
	next := *r
	next.upgrade()
	next.Witnesses.Quorum = append(slices.Clone(r.Witnesses.Quorum), QuorumStep{From: size, Witnesses: n})
	if err := next.Check(); err != nil {
		return false, err
	}
	*r = next
	return true, nil
}

// upgrade makes a version 1 root a version 2 one, which can list witnesses.
func (r *Root) upgrade() {
	if r.MediaType == MediaTypeV1 {
		r.MediaType, r.Witnesses.v1Keys = MediaType, nil
	}
}

// sizeFloor is where a new account on network may start at the earliest
// (ok false when root lists no account there): at or past every size the
// network's accounts already start or end at, and never 0.
func sizeFloor(root Root, network string) (floor uint64, ok bool) {
	for _, a := range root.Accounts {
		if a.Network() != network {
			continue
		}
		ok = true
		floor = max(floor, a.Sizes.Start)
		if a.Sizes.End != nil {
			floor = max(floor, *a.Sizes.End)
		}
	}
	return floor, ok
}

// Sign signs the root as a note by the log's key, as /log/trust serves it.
func Sign(r Root, s *evlog.Signer) ([]byte, error) {
	if s.Key().Text != r.Log.Key {
		return nil, errors.New("trust: the root names another log key than the signer's")
	}
	return s.SignText(string(r.Marshal()))
}

// Open reads a trust root served as a signed note (/log/trust), checking
// the signature with the pinned log key, or a plain JSON file when key is
// nil (a file the verifier pinned itself).
func Open(data []byte, key *evlog.Key) (Root, error) {
	text := data
	if !IsSigned(data) {
		if key != nil {
			return Root{}, errors.New("trust: a plain JSON root is not signed; fetch /log/trust, which the log's key signs")
		}
	} else {
		if key == nil {
			k, err := keyOfNote(data)
			if err != nil {
				return Root{}, err
			}
			key = &k
		}
		t, err := key.OpenText(data)
		if err != nil {
			return Root{}, fmt.Errorf("trust: %w", err)
		}
		text = []byte(t)
	}
	r, err := Parse(text)
	if err != nil {
		return Root{}, err
	}
	if key != nil && r.Log.Key != key.Text {
		return Root{}, fmt.Errorf("trust: the root names log key %s, signed by %s", r.Log.Key, key.Text)
	}
	return r, nil
}

// IsSigned reports whether data is a root signed as a note (/log/trust),
// not a plain JSON one.
func IsSigned(data []byte) bool {
	return !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) || bytes.Contains(data, []byte("\n\n\u2014 "))
}

// keyOfNote reads the key a signed root names in its own text, which its
// signature must then verify with: a root is self-signed.
func keyOfNote(data []byte) (evlog.Key, error) {
	i := bytes.Index(data, []byte("\n\n\u2014 "))
	if i < 0 {
		return evlog.Key{}, errors.New("trust: neither a JSON trust root nor one signed as a note")
	}
	var head struct {
		Log Log `json:"log"`
	}
	if err := json.Unmarshal(data[:i+1], &head); err != nil {
		return evlog.Key{}, fmt.Errorf("trust: the signed note does not hold a trust root: %w", err)
	}
	return evlog.ParseKey(head.Log.Key)
}
