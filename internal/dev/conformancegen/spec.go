package main

import (
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/keeperhq/keeper/internal/dev/conformance"
	"github.com/keeperhq/keeper/receipt"
)

// The checks of conformance/README.md, in order.
const (
	checkFormat      = "format"
	checkTrust       = "trust"
	checkDigest      = "digest"
	checkCheckpoint  = "checkpoint"
	checkWitnesses   = "witnesses"
	checkInclusion   = "inclusion"
	checkProof       = "proof"
	checkSize        = "size"
	checkConsistency = "consistency"
	checkChain       = "chain"
	checkNetwork     = "network"
	checkTransaction = "transaction"
	checkEndpoints   = "endpoints"
	checkPayload     = "payload"
	checkAccount     = "account"
	checkBatch       = "batch"
	checkStatus      = "status"
	checkFinality    = "finality"
	checkBlock       = "block"
	checkTime        = "time"
)

// The audit's findings of conformance/README.md ("" for none).
const (
	findingPayload = "payload"
	findingBatch   = "batch"
	findingAccount = "account"
	findingKey     = "key"
	findingFork    = "fork"
	findingQuorum  = "witnesses"
)

// defaultClocks are the networks every verifier trusts for time.
var defaultClocks = []string{etherlink.network(), solMainnet.network()}

// spec is one vector as the generator writes it down.
type spec struct {
	name, class, control, description string

	receipt string
	format  string // conformance.FormatJSON unless set
	// trust is the pinned root's text; "" pins the world's main root as
	// plain JSON, unless untrusted.
	trust     string
	untrusted bool
	update    string
	file      []byte
	clocks    []string
	log       []string // the checkpoints the log serves; nil: those of sizes 5 and 8

	etherlink, solana []*endpoint

	check string // the check that fails; "" for a receipt that verifies
	audit string
}

func (s spec) vector(w *world) (conformance.Vector, error) {
	v := conformance.Vector{
		Name: s.name, Class: s.class, Control: s.control, Description: s.description,
		Receipt: s.receipt, ReceiptFormat: cmp.Or(s.format, conformance.FormatJSON),
		Trust: s.trust, TrustUpdate: s.update, File: hex.EncodeToString(s.file), Clocks: slices.Clone(s.clocks),
		Endpoints: map[string][]string{}, Answers: map[string][]conformance.Call{},
		Log:    s.log,
		Expect: conformance.Expect{Verifier: conformance.VerifierExpect{Verdict: conformance.Accept}, Audit: conformance.AuditExpect{Finding: s.audit}},
	}
	if v.Trust == "" && !s.untrusted {
		v.Trust = string(w.mainRoot().Marshal())
	}
	if v.Log == nil {
		v.Log = []string{string(w.cp5), string(w.cp8)}
	}
	if v.Clocks == nil {
		v.Clocks = []string{}
	}
	for chain, eps := range map[string][]*endpoint{"etherlink": s.etherlink, "solana": s.solana} {
		for _, e := range eps {
			if _, dup := v.Answers[e.name]; dup {
				return v, fmt.Errorf("vector %s: two endpoints named %s", s.name, e.name)
			}
			v.Endpoints[chain] = append(v.Endpoints[chain], e.name)
			v.Answers[e.name] = e.calls
		}
	}
	if s.check != "" {
		v.Expect.Verifier = conformance.VerifierExpect{Verdict: conformance.Reject, Check: s.check}
		return v, nil
	}
	bound, err := s.bound()
	if err != nil {
		return v, fmt.Errorf("vector %s: %w", s.name, err)
	}
	v.Expect.ExistedBy = bound
	return v, nil
}

// bound is the earliest block time of the receipt's anchors on networks
// whose clocks are trusted, RFC 3339 ("" when none is). A version 1
// anchor names no network: it is on its chain's endpoints' network.
func (s spec) bound() (string, error) {
	var (
		r   receipt.Receipt
		err error
	)
	if s.format == conformance.FormatTLogProof {
		r, err = receipt.ParseTLogProof([]byte(s.receipt))
	} else {
		r, err = receipt.Parse([]byte(s.receipt))
	}
	if err != nil {
		return "", fmt.Errorf("a receipt expected to verify does not parse: %w", err)
	}
	trusted := append(slices.Clone(defaultClocks), s.clocks...)
	var t time.Time
	for _, a := range r.Anchors {
		network := a.Network
		if network == "" {
			if network, err = s.nodeNetwork(a.Chain); err != nil {
				return "", err
			}
		}
		if slices.Contains(trusted, network) && (t.IsZero() || a.BlockTime.Before(t)) {
			t = a.BlockTime
		}
	}
	if t.IsZero() {
		return "", nil
	}
	return t.UTC().Format(time.RFC3339), nil
}

// nodeNetwork is the network chain's first endpoint says it is on.
func (s spec) nodeNetwork(chain string) (string, error) {
	eps := map[string][]*endpoint{"etherlink": s.etherlink, "solana": s.solana}[chain]
	if len(eps) == 0 {
		return "", fmt.Errorf("no endpoint for chain %q", chain)
	}
	for _, c := range eps[0].calls {
		var answer string
		switch c.Method {
		case "eth_chainId":
			mustUnmarshal(c.Result, &answer)
			var id uint64
			if _, err := fmt.Sscanf(answer, "0x%x", &id); err != nil {
				return "", fmt.Errorf("eth_chainId answered %s", c.Result)
			}
			return receipt.EVMNetwork(id), nil
		case "getGenesisHash":
			mustUnmarshal(c.Result, &answer)
			return receipt.SolanaNetwork(answer), nil
		}
	}
	return "", fmt.Errorf("endpoint %s does not say its network", eps[0].name)
}

// encode writes a vector as its file holds it: indented JSON, HTML
// characters unescaped, ending in a newline.
func encode(v conformance.Vector) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("encode vector %s: %w", v.Name, err)
	}
	return b.Bytes(), nil
}
