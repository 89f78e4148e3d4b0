package audit

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
)

// target is one account to read: on a network (CAIP-2), or on whatever
// network its chain's endpoints are on ("", the short form).
type target struct {
	chain, network, address string
	since                   time.Time // when the trust root first listed it (zero: the short form)
}

func (t target) String() string {
	if t.network == "" {
		return t.chain + "=" + t.address
	}
	return trust.CAIP10(t.network, t.address)
}

// readChains reads every transaction of every account to audit on every
// network, through every endpoint there: the trust root's accounts, or
// (the short form) the accounts given or keeper lists. It returns the
// checkpoints they anchored.
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
		if _, known := chainKinds[name]; known && !named && o.DefaultRPC != nil {
			if url := o.DefaultRPC(name); url != "" {
				chainList = append(chainList, Chain{Name: name, RPC: url})
			}
		}
	}
	for _, c := range chainList {
		if _, ok := chainKinds[c.Name]; !ok {
			return nil, fmt.Errorf("cannot audit chain %q: only %s", c.Name, strings.Join(slices.Sorted(maps.Keys(chainKinds)), " and "))
		}
	}
	endpoints := openEndpoints(ctx, chainList)

	var targets []target
	if o.Trust != nil {
		targets = trustedTargets(*o.Trust, listed, r)
	} else {
		targets = shortTargets(chainList, byChain, r)
	}
	var out []Anchored
	for _, t := range targets {
		got := readTarget(ctx, o, t, endpoints, byChain[t.chain], r)
		r.Anchors[t.chain] += len(got)
		out = append(out, got...)
	}
	if o.Trust == nil {
		for name, as := range byChain {
			if slices.ContainsFunc(chainList, func(c Chain) bool { return c.Name == name }) {
				continue
			}
			why := "no RPC endpoint for the chain"
			if _, known := chainKinds[name]; !known {
				why = "the audit reads " + strings.Join(slices.Sorted(maps.Keys(chainKinds)), " and ")
			}
			r.Warnings = append(r.Warnings, fmt.Sprintf("%s: %d anchor(s) keeper lists were not audited (%s)", name, len(as), why))
		}
	}
	if len(out) == 0 {
		r.find(KindUnread, "", "no checkpoint anchor was read from any chain: nothing the log says was checked against a chain")
	}
	return out, nil
}

// readTarget reads one account's transactions through every endpoint on
// its network (the short form: on each network its chain's endpoints are
// on), and returns the checkpoints it anchored. An account no endpoint
// could read is a finding.
func readTarget(ctx context.Context, o Options, t target, endpoints []*endpoint, listed []evlog.Anchor, r *Report) []Anchored {
	var (
		networks []string // in the endpoints' order
		byNet    = map[string][]*endpoint{}
		why      []string
	)
	for _, e := range endpoints {
		switch {
		case e.chain != t.chain:
		case e.failed != nil:
			why = append(why, e.failed.Error())
		case t.network != "" && e.network != t.network:
			why = append(why, fmt.Sprintf("an endpoint is on %s (%s)", e.network, e.name))
		default:
			if _, ok := byNet[e.network]; !ok {
				networks = append(networks, e.network)
			}
			byNet[e.network] = append(byNet[e.network], e)
		}
	}
	var mine []evlog.Anchor
	for _, a := range listed {
		if trust.SameAddress(a.Account, t.address) && (t.network == "" || a.Network == "" || a.Network == t.network) {
			mine = append(mine, a)
		}
	}
	var out []Anchored
	read := false
	for _, network := range networks {
		s := &session{target: t, network: network, kind: chainKinds[t.chain], eps: byNet[network], listed: mine,
			key: *o.Key, trusted: o.Trust != nil, scan: o.ScanBlocks, r: r}
		if o.Trust != nil {
			s.root = *o.Trust
		} else {
			root, err := trust.ShortForm(o.Key.Text, []string{t.chain + "=" + t.address})
			if err != nil {
				why = append(why, err.Error())
				continue
			}
			s.root = root
		}
		got, err := s.run(ctx)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		read = true
		out = append(out, got...)
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
// is read (JudgeTransaction).
func trustedTargets(root trust.Root, listed []evlog.Anchor, r *Report) []target {
	var out []target
	for _, a := range root.Accounts {
		t := target{chain: a.Chain, network: a.Network(), address: a.Address(), since: a.ValidFor.Start}
		i := slices.IndexFunc(out, func(x target) bool {
			return x.network == t.network && trust.SameAddress(x.address, t.address)
		})
		switch {
		case i < 0:
			out = append(out, t)
		case t.since.Before(out[i].since):
			out[i].since = t.since
		}
	}
	for _, a := range listed {
		if ok, why := root.Allows(a.Chain, a.Network, a.Account, -1); !ok {
			r.find(KindAccount, a.Chain, "keeper lists tx %s: %s", a.TxRef, why)
		}
	}
	return out
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
