// Package conformance reads keeper's receipt conformance corpus
// (conformance/README.md, the spec of the format) and serves a vector's
// recorded chain answers over JSON-RPC, so that every verifier of keeper's
// receipts can be run against every vector.
package conformance

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/keeperhq/keeper/internal/strictjson"
)

// The verdicts a vector expects.
const (
	Accept = "accept"
	Reject = "reject"
)

// The forms a vector's receipt is written in.
const (
	FormatJSON      = "json"
	FormatTLogProof = "tlog-proof"
)

// Vector is one test vector, as conformance/README.md defines its fields.
type Vector struct {
	Name        string `json:"name"`
	Class       string `json:"class"`
	Description string `json:"description"`
	// Control names the genuine vector an invalid one changes in exactly
	// one way ("" for a genuine vector).
	Control string `json:"control,omitempty"`
	// Receipt is the receipt file as exact text, in ReceiptFormat.
	Receipt       string `json:"receipt"`
	ReceiptFormat string `json:"receipt_format"`
	// Trust is the trust root the verifier pins, as exact text (plain JSON
	// or a signed note); "" pins nothing.
	Trust string `json:"trust"`
	// TrustUpdate is a newer root offered on top of Trust ("" for none).
	TrustUpdate string `json:"trust_update,omitempty"`
	// File is the original file in hex ("" when not given).
	File string `json:"file,omitempty"`
	// Clocks are the networks (CAIP-2) trusted for time beyond the defaults.
	Clocks []string `json:"clocks"`
	// Endpoints are, per chain, the names of the endpoints asked, in order.
	Endpoints map[string][]string `json:"endpoints"`
	// Answers are, per endpoint name, the calls it answers.
	Answers map[string][]Call `json:"answers"`
	// Log are the signed checkpoints the log serves, for the audit.
	Log    []string `json:"log,omitempty"`
	Expect Expect   `json:"expect"`
}

// Call is one recorded JSON-RPC call and its answer: Result (which may be
// JSON null) or Error.
type Call struct {
	Method string            `json:"method"`
	Params []json.RawMessage `json:"params"`
	Result json.RawMessage   `json:"result,omitempty"`
	Error  *RPCError         `json:"error,omitempty"`
}

// RPCError is a JSON-RPC error object.
type RPCError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// Expect is what every implementation must conclude.
type Expect struct {
	Verifier VerifierExpect `json:"verifier"`
	// ExistedBy is the bound a verifier prints (RFC 3339), or "" when no
	// clock it trusts stands behind the receipt, or the receipt is refused.
	ExistedBy string      `json:"existed_by"`
	Audit     AuditExpect `json:"audit"`
}

// VerifierExpect is a verifier's verdict and, for Reject, the first check
// that fails.
type VerifierExpect struct {
	Verdict string `json:"verdict"`
	Check   string `json:"check,omitempty"`
}

// AuditExpect is the audit's finding on the vector's transactions ("" for
// none).
type AuditExpect struct {
	Finding string `json:"finding"`
}

// Dir is the absolute path of the corpus, conformance/vectors, found from
// this source file so that tests of any package read it.
func Dir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		panic("conformance: cannot locate the corpus: no caller information")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "conformance", "vectors")
}

// Load reads every vector (*.json) in dir, strictly (exact keys, no
// duplicate or unknown field, no trailing data), sorted by name. A vector
// whose name is not its file's name is refused.
func Load(dir string) ([]Vector, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("conformance: list %s: %w", dir, err)
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("conformance: no vectors (*.json) in %s", dir)
	}
	out := make([]Vector, 0, len(paths))
	for _, p := range paths {
		v, err := Read(p)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	slices.SortFunc(out, func(a, b Vector) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Read reads one vector file strictly.
func Read(path string) (Vector, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Vector{}, fmt.Errorf("conformance: %w", err)
	}
	var v Vector
	if err := strictjson.DecodeAs("the vector", data, &v); err != nil {
		return Vector{}, fmt.Errorf("conformance: %s: %w", filepath.Base(path), err)
	}
	if want := strings.TrimSuffix(filepath.Base(path), ".json"); v.Name != want {
		return Vector{}, fmt.Errorf("conformance: %s: the vector is named %q, not after its file", filepath.Base(path), v.Name)
	}
	return v, nil
}
