package conformance

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Verdict is what an implementation concluded of a vector: accept or not,
// the first check that failed, and the time bound it printed (zero: none).
type Verdict struct {
	OK        bool
	Check     string
	ExistedBy time.Time
	Detail    string // what the implementation said, for the failure message
}

// Assert fails t when got differs from the vector's expected verdict,
// failing check or time bound.
func (v Vector) Assert(t testing.TB, got Verdict) {
	t.Helper()
	want := v.Expect.Verifier
	if want.Verdict == "accept" {
		assert.True(t, got.OK, "%s: want accept, got %s: %s", v.Name, got.Check, got.Detail)
	} else {
		assert.False(t, got.OK, "%s: want reject at %s, got accept: %s", v.Name, want.Check, got.Detail)
		assert.Equal(t, want.Check, got.Check, "%s: the failing check (%s)", v.Name, got.Detail)
	}
	bound := ""
	if !got.ExistedBy.IsZero() {
		bound = got.ExistedBy.UTC().Format(time.RFC3339)
	}
	assert.Equal(t, v.Expect.ExistedBy, bound, "%s: the time bound (%s)", v.Name, got.Detail)
}

// FileSHA256 is the hex SHA-256 of the vector's original file ("" when it
// gives none).
func (v Vector) FileSHA256() string {
	if v.File == "" {
		return ""
	}
	b, err := hex.DecodeString(v.File)
	if err != nil {
		return "not hex"
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// MinVectors is the fewest vectors the corpus may hold (issue: at least 60,
// genuine controls included).
const MinVectors = 60

// Each runs f on every vector of the corpus, each as a subtest named after
// it, once it has checked that the corpus loads whole and holds at least
// MinVectors: every implementation's runner starts here.
func Each(t *testing.T, f func(t *testing.T, v Vector)) {
	t.Helper()
	vectors, err := Load(Dir())
	if err != nil {
		t.Fatalf("the corpus: %v", err)
	}
	if len(vectors) < MinVectors {
		t.Fatalf("the corpus holds %d vectors, fewer than %d", len(vectors), MinVectors)
	}
	for _, v := range vectors {
		t.Run(v.Name, func(t *testing.T) { f(t, v) })
	}
}
