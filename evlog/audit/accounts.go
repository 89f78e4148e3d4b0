package audit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
)

// target is one account to read: on a network (CAIP-2), or on whatever
// network its chain's endpoints are on ("", the short form).
type target struct {
	chain, network, address string
}

func (t target) String() string {
	if t.network == "" {
		return t.chain + "=" + t.address
	}
	return trust.CAIP10(t.network, t.address)
}

// endpoint is one chain endpoint, opened or not.
type endpoint struct {
	chain  string
	rd     reader
	failed error // why it could not be opened
}

// readChains reads the anchors of every account to audit on every network:
// the trust root's accounts, or (the short form) the accounts given or
// keeper lists.
func readChains(ctx context.Context, o Options, listed []evlog.Anchor, r *Report) ([]Anchored, error) {
	byChain := map[string][]evlog.Anchor{}
	for _, a := range listed {
		byChain[a.Chain] = append(byChain[a.Chain], a)
	}
	var names []string // the chains to read, in a stable order
	if o.Trust != nil {
		for _, a := range o.Trust.Accounts {
			names = append(names, a.Chain)
		}
	} else {
		for _, c := range o.Chains {
			names = append(names, c.Name)
		}
		names = append(names, slices.Sorted(maps.Keys(byChain))...)
	}
	chainList := slices.Clone(o.Chains)
	for _, name := range names {
		named := slices.ContainsFunc(chainList, func(c Chain) bool { return c.Name == name })
		if _, known := readers[name]; known && !named && o.DefaultRPC != nil {
			if url := o.DefaultRPC(name); url != "" {
				chainList = append(chainList, Chain{Name: name, RPC: url})
			}
		}
	}
	var endpoints []endpoint
	for _, c := range chainList {
		newReader, ok := readers[c.Name]
		if !ok {
			return nil, fmt.Errorf("cannot audit chain %q: only %s", c.Name, strings.Join(slices.Sorted(maps.Keys(readers)), " and "))
		}
		rd, err := newReader(ctx, c, o)
		if err != nil {
			endpoints = append(endpoints, endpoint{chain: c.Name, failed: err})
			continue
		}
		defer rd.close()
		endpoints = append(endpoints, endpoint{chain: c.Name, rd: rd})
	}

	var targets []target
	if o.Trust != nil {
		targets = trustedTargets(*o.Trust, listed, r)
	} else {
		targets = shortTargets(chainList, byChain, r)
	}
	var out []Anchored
	for _, t := range targets {
		got := readTarget(ctx, t, endpoints, byChain[t.chain], r)
		if o.Trust != nil {
			checkAllowed(*o.Trust, t, got, r)
		}
		r.Anchors[t.chain] += len(got)
		out = append(out, got...)
	}
	if o.Trust == nil {
		for name, as := range byChain {
			if slices.ContainsFunc(chainList, func(c Chain) bool { return c.Name == name }) {
				continue
			}
			why := "no RPC endpoint for the chain"
			if _, known := readers[name]; !known {
				why = "the audit reads " + strings.Join(slices.Sorted(maps.Keys(readers)), " and ")
			}
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %d anchor(s) keeper lists were not audited (%s)", name, len(as), why))
		}
	}
	if len(out) == 0 {
		r.find(KindUnread, "", "no checkpoint anchor was read from any chain: nothing the log says was checked against a chain")
	}
	return out, nil
}

// readTarget reads one account's anchors with the endpoint on its network
// (the short form: every endpoint of its chain). An account no endpoint
// could read is a finding.
func readTarget(ctx context.Context, t target, endpoints []endpoint, listed []evlog.Anchor, r *Report) []Anchored {
	var (
		out  []Anchored
		read bool
		why  []string
	)
	for _, e := range endpoints {
		if e.chain != t.chain {
			continue
		}
		if e.rd == nil {
			why = append(why, e.failed.Error())
			continue
		}
		if t.network != "" && e.rd.network() != t.network {
			why = append(why, "an endpoint is on "+e.rd.network())
			continue
		}
		var mine []evlog.Anchor
		for _, a := range listed {
			if trust.SameAddress(a.Account, t.address) && (t.network == "" || a.Network == "" || a.Network == t.network) {
				mine = append(mine, a)
			}
		}
		got, err := e.rd.read(ctx, t.address, mine, r)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		read = true
		out = append(out, got...)
		if t.network != "" {
			break // one endpoint a network
		}
	}
	if !read {
		if len(why) == 0 {
			why = append(why, "no RPC endpoint for "+t.chain)
		}
		r.find(KindUnread, t.chain, "cannot read %s: %s", t, strings.Join(why, "; "))
	}
	return out
}

// trustedTargets are the trust root's accounts, each once. An anchor keeper
// lists from an account the root does not list on its network at all is a
// finding here; one outside its account's sizes is found when the account
// is read (checkAllowed).
func trustedTargets(root trust.Root, listed []evlog.Anchor, r *Report) []target {
	var out []target
	for _, a := range root.Accounts {
		t := target{chain: a.Chain, network: a.Network(), address: a.Address()}
		if !slices.ContainsFunc(out, func(x target) bool {
			return x.network == t.network && trust.SameAddress(x.address, t.address)
		}) {
			out = append(out, t)
		}
	}
	for _, a := range listed {
		if ok, why := root.Allows(a.Chain, a.Network, a.Account, -1); !ok {
			r.find(KindAccount, a.Chain, "keeper lists tx %s: %s", a.TxRef, why)
		}
	}
	return out
}

// checkAllowed finds the anchors an account sent for sizes the trust root
// does not list it for (a rotated-out key, or one listed from a later
// size).
func checkAllowed(root trust.Root, t target, got []Anchored, r *Report) {
	for _, a := range got {
		if a.Ref.KeyHash != r.Key.Hash {
			continue // another log's: the key check reports it
		}
		if ok, why := root.Allows(t.chain, t.network, a.Account, int64(a.Ref.Size)); !ok {
			r.find(KindAccount, a.Chain, "%s: %s", a, why)
		}
	}
}

// shortTargets are the short form's accounts: for each chain, the ones
// given, else the ones keeper lists. An anchor keeper lists from another
// account than the ones given is a finding.
func shortTargets(chainList []Chain, byChain map[string][]evlog.Anchor, r *Report) []target {
	var out []target
	seen := map[string]bool{}
	for _, c := range chainList {
		if seen[c.Name] {
			continue
		}
		seen[c.Name] = true
		var accounts []string
		for _, x := range chainList {
			if x.Name == c.Name {
				accounts = append(accounts, x.Accounts...)
			}
		}
		listed := byChain[c.Name]
		if len(accounts) == 0 {
			for _, a := range listed {
				if a.Account != "" && !slices.Contains(accounts, a.Account) {
					accounts = append(accounts, a.Account)
				}
			}
			if len(accounts) == 0 {
				r.Warnings = append(r.Warnings, c.Name+": keeper lists no anchor and no account was given (--account): nothing to read")
			}
		} else {
			for _, a := range listed {
				if !slices.ContainsFunc(accounts, func(x string) bool { return trust.SameAddress(x, a.Account) }) {
					r.find(KindAnchor, c.Name, "keeper lists tx %s as sent by %s, not an anchoring account (%s)", a.TxRef, a.Account, strings.Join(accounts, ", "))
				}
			}
		}
		for _, a := range accounts {
			out = append(out, target{chain: c.Name, address: a})
		}
	}
	return out
}
