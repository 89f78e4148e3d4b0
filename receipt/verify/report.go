package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keeperhq/keeper/receipt"
)

// Report is the outcome of checking a whole receipt.
type Report struct {
	// Results are one per anchor, in the receipt's order.
	Results []Result
	// OK is true when every anchor verified.
	OK bool
	// Networks are the distinct networks (CAIP-2) of the anchors that
	// verified, in receipt order: an anchor listed twice counts once.
	Networks []string
	// ExistedBy is the bound the receipt proves: the evidence existed no
	// later than the earliest verified anchor's block time on chain (zero
	// when none verified).
	ExistedBy time.Time
	// Key is the log key a version 3 receipt was checked against (note
	// vkey: origin, key hash and key); Pinned says who pinned it.
	Key    string
	Pinned string
	// Warning is InsecureWarning when the receipt was checked against
	// itself, as in every Result.
	Warning string
}

// Check checks every anchor of r, then the receipt's existed_by, which
// must be the earliest anchor's block time on chain when the receipt states
// one (a mismatch fails every Result with CheckTime). With
// nothing pinned (and not InsecureTrustReceipt) every Result fails with
// CheckTrust: Check never reports OK without a pinned key otherwise.
func Check(ctx context.Context, r receipt.Receipt, o Options) Report {
	p, f := o.pin()
	rep := Report{Results: make([]Result, 0, len(r.Anchors))}
	if f == nil {
		rep.Pinned = p.describe()
		if p.insecure {
			rep.Warning = InsecureWarning
		}
	}
	for _, a := range r.Anchors {
		rep.Results = append(rep.Results, anchor(ctx, r, a, o, p, f))
	}
	for _, res := range rep.Results {
		if res.Key != "" {
			rep.Key = res.Key
		}
		if res.OK && (rep.ExistedBy.IsZero() || res.Time.Before(rep.ExistedBy)) {
			rep.ExistedBy = res.Time
		}
	}
	allOK := true
	for _, res := range rep.Results {
		allOK = allOK && res.OK
	}
	// Checked only when every anchor stands: else the receipt fails anyway,
	// and the earliest anchor may be the one that did not verify.
	if allOK && !r.ExistedBy.IsZero() && !rep.ExistedBy.IsZero() && !r.ExistedBy.Equal(rep.ExistedBy) {
		// The one fact a reader takes off the receipt is wrong: no anchor
		// of it stands.
		for i, res := range rep.Results {
			if res.OK {
				rep.Results[i].OK, rep.Results[i].Check = false, CheckTime
				rep.Results[i].Reason = fmt.Sprintf("the receipt's existed_by is %s, its earliest anchor's block time on chain is %s",
					r.ExistedBy.UTC().Format(time.RFC3339Nano), rep.ExistedBy.UTC().Format(time.RFC3339))
			}
		}
		rep.ExistedBy = time.Time{}
	}
	rep.OK = len(rep.Results) > 0
	for _, res := range rep.Results {
		rep.OK = rep.OK && res.OK
		if res.OK && !slices.Contains(rep.Networks, res.Network) {
			rep.Networks = append(rep.Networks, res.Network)
		}
	}
	return rep
}

// Summary is the report in one line: "verified on N network(s) (…);
// existed no later than T", or how many anchors failed; prefixed
// "INSECURE" when nothing was pinned.
func (rep Report) Summary() string {
	var s string
	if rep.OK {
		var names []string
		for _, n := range rep.Networks {
			names = append(names, DescribeNetwork(n))
		}
		s = fmt.Sprintf("verified on %d network(s): %s; existed no later than %s (chain time)",
			len(rep.Networks), strings.Join(names, ", "), rep.ExistedBy.UTC().Format(time.RFC3339))
	} else {
		failed := 0
		for _, res := range rep.Results {
			if !res.OK {
				failed++
			}
		}
		s = fmt.Sprintf("not verified: %d of %d anchors failed", failed, len(rep.Results))
	}
	if rep.Warning != "" {
		s = "INSECURE (nothing pinned): " + s
	}
	return s
}
