package verify

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keeperhq/keeper/receipt"
)

// Report is the outcome of checking a whole receipt. It marshals to the
// JSON the /verify page reads.
type Report struct {
	// OK is true when every anchor verified.
	OK bool `json:"ok"`
	// Check and Reason are the first check that failed, receipt-wide
	// (format, trust, digest) or of the first anchor that failed, in the
	// receipt's order (conformance/README.md); "" when OK.
	Check  string `json:"check,omitempty"`
	Reason string `json:"reason,omitempty"`
	// EvidenceID, Digest and Version are the receipt's, once it parsed.
	EvidenceID string `json:"evidence_id,omitempty"`
	Digest     string `json:"digest,omitempty"`
	Version    int    `json:"version,omitempty"`
	// Results are one per anchor, in the receipt's order.
	Results []Result `json:"results"`
	// Networks are the distinct networks (CAIP-2) of the anchors that
	// verified, in receipt order: an anchor listed twice counts once.
	Networks []string `json:"networks"`
	// ExistedBy is the bound this verifier proves: the evidence existed
	// no later than the earliest verified anchor's block time on a network
	// whose clock it trusts (Clocks); zero when no trusted clock stands
	// behind the receipt, which then proves no time bound.
	ExistedBy time.Time `json:"existed_by,omitzero"`
	// Clocks are the networks whose clocks stand behind ExistedBy.
	Clocks []string `json:"clocks"`
	// Claimed is the receipt's existed_by: what keeper claims, checked to
	// be its earliest anchor's block time on chain.
	Claimed time.Time `json:"claimed,omitzero"`
	// Key is the log key a version 3 receipt was checked against (note
	// vkey: origin, key hash and key); Pinned says who pinned it.
	Key    string `json:"key,omitempty"`
	Pinned string `json:"pinned,omitempty"`
	// Warning is InsecureWarning when the receipt was checked against
	// itself, as in every Result.
	Warning string `json:"warning,omitempty"`
}

// Check checks every anchor of r, then the receipt's existed_by, which
// must be the earliest anchor's block time on chain when the receipt states
// one (a mismatch fails every Result with CheckTime). With
// nothing pinned (and not InsecureTrustReceipt) every Result fails with
// CheckTrust: Check never reports OK without a pinned key otherwise.
func Check(ctx context.Context, r receipt.Receipt, o Options) Report {
	p, f := o.pin()
	rep := Report{Results: make([]Result, 0, len(r.Anchors)), EvidenceID: r.EvidenceID, Digest: r.Digest,
		Version: r.Version, Claimed: r.ExistedBy, Networks: []string{}, Clocks: []string{}}
	if f == nil {
		rep.Pinned = p.describe()
		if p.insecure {
			rep.Warning = InsecureWarning
		}
	}
	for _, a := range r.Anchors {
		rep.Results = append(rep.Results, anchor(ctx, r, a, o, p, f))
	}
	var earliest time.Time
	allOK := len(rep.Results) > 0
	for _, res := range rep.Results {
		if res.Key != "" {
			rep.Key = res.Key
		}
		allOK = allOK && res.OK
		if res.OK && (earliest.IsZero() || res.Time.Before(earliest)) {
			earliest = res.Time
		}
	}
	// Checked only when every anchor stands: else the receipt fails anyway,
	// and the earliest anchor may be the one that did not verify.
	if allOK && !r.ExistedBy.IsZero() && !r.ExistedBy.Equal(earliest) {
		// The one fact a reader takes off the receipt is wrong: no anchor
		// of it stands.
		for i := range rep.Results {
			rep.Results[i].OK, rep.Results[i].Check = false, CheckTime
			rep.Results[i].Reason = fmt.Sprintf("the receipt's existed_by is %s, its earliest anchor's block time on chain is %s",
				r.ExistedBy.UTC().Format(time.RFC3339Nano), earliest.UTC().Format(time.RFC3339))
		}
	}
	rep.OK = len(rep.Results) > 0
	for _, res := range rep.Results {
		rep.OK = rep.OK && res.OK
		if !res.OK && rep.Check == "" {
			rep.Check, rep.Reason = res.Check, res.Reason
		}
	}
	if !rep.OK {
		return rep
	}
	for _, res := range rep.Results {
		if !slices.Contains(rep.Networks, res.Network) {
			rep.Networks = append(rep.Networks, res.Network)
		}
		if !res.Clock {
			continue
		}
		if !slices.Contains(rep.Clocks, res.Network) {
			rep.Clocks = append(rep.Clocks, res.Network)
		}
		if rep.ExistedBy.IsZero() || res.Time.Before(rep.ExistedBy) {
			rep.ExistedBy = res.Time
		}
	}
	return rep
}

// Summary is the report in one line: "verified on N network(s) (…);
// existed no later than T", or that no trusted clock bounds it, or how
// many anchors failed; prefixed "INSECURE" when nothing was pinned.
func (rep Report) Summary() string {
	var s string
	switch {
	case rep.OK:
		var names []string
		for _, n := range rep.Networks {
			names = append(names, DescribeNetwork(n))
		}
		s = fmt.Sprintf("verified on %d network(s): %s; ", len(rep.Networks), strings.Join(names, ", "))
		if rep.ExistedBy.IsZero() {
			s += "no time bound: none of its networks is a clock this verifier trusts (trust one with --clock NETWORK)"
		} else {
			s += fmt.Sprintf("existed no later than %s (chain time; trusted clocks: %s)",
				rep.ExistedBy.UTC().Format(time.RFC3339), strings.Join(rep.Clocks, ", "))
		}
	case len(rep.Results) == 0:
		s = fmt.Sprintf("not verified: %s: %s", rep.Check, rep.Reason)
	default:
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
