package merkle_test

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/merkle"
)

// memLog is a log kept by golang.org/x/mod/sumdb/tlog, code keeper does not
// own, over an in-memory hash store.
type memLog struct{ hashes []tlog.Hash }

func (l *memLog) ReadHashes(indexes []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(indexes))
	for i, x := range indexes {
		if x >= int64(len(l.hashes)) {
			return nil, fmt.Errorf("no stored hash %d", x)
		}
		out[i] = l.hashes[x]
	}
	return out, nil
}

func newMemLog(t *testing.T, n int) *memLog {
	l := &memLog{}
	for i := range n {
		entry := sha256.Sum256(fmt.Appendf(nil, "entry %d", i))
		hs, err := tlog.StoredHashes(int64(i), entry[:], l)
		require.NoError(t, err)
		l.hashes = append(l.hashes, hs...)
	}
	return l
}

func (l *memLog) root(t *testing.T, n uint64) merkle.Hash {
	h, err := tlog.TreeHash(int64(n), l)
	require.NoError(t, err)
	return merkle.Hash(h)
}

func (l *memLog) consistency(t *testing.T, m, n uint64) []merkle.Hash {
	p, err := tlog.ProveTree(int64(n), int64(m), l)
	require.NoError(t, err)
	out := make([]merkle.Hash, len(p))
	for i, h := range p {
		out[i] = merkle.Hash(h)
	}
	return out
}

// checkTree is tlog's verdict on a proof.
func checkTree(m, n uint64, rootM, rootN merkle.Hash, proof []merkle.Hash) error {
	p := make(tlog.TreeProof, len(proof))
	for i, h := range proof {
		p[i] = tlog.Hash(h)
	}
	return tlog.CheckTree(p, int64(n), tlog.Hash(rootN), int64(m), tlog.Hash(rootM))
}

// TestConsistencyAgreesWithTlogCheckTree proves every pair of sizes up to 70
// and random pairs up to 3,000 with tlog.ProveTree: keeper's verifier
// accepts each proof, and both it and tlog.CheckTree refuse the same proof
// with any one bit flipped, a hash left out or added, another old root, or
// sizes off by one.
func TestConsistencyAgreesWithTlogCheckTree(t *testing.T) {
	l := newMemLog(t, 3000)
	type pair struct{ m, n uint64 }
	var pairs []pair
	for n := uint64(1); n <= 70; n++ {
		for m := uint64(1); m <= n; m++ {
			pairs = append(pairs, pair{m, n})
		}
	}
	rng := rand.New(rand.NewPCG(9162, 2))
	for range 200 {
		n := 1 + rng.Uint64N(3000)
		pairs = append(pairs, pair{1 + rng.Uint64N(n), n})
	}
	for _, p := range pairs {
		rootM, rootN := l.root(t, p.m), l.root(t, p.n)
		proof := l.consistency(t, p.m, p.n)
		require.NoError(t, checkTree(p.m, p.n, rootM, rootN, proof), "tlog, %d → %d", p.m, p.n)
		require.NoError(t, merkle.VerifyConsistency(p.m, p.n, rootM, rootN, proof), "%d → %d", p.m, p.n)

		both := func(what string, m, n uint64, rootM, rootN merkle.Hash, proof []merkle.Hash) {
			t.Helper()
			theirs := checkTree(m, n, rootM, rootN, proof)
			ours := merkle.VerifyConsistency(m, n, rootM, rootN, proof)
			if theirs == nil {
				// A tampering tlog accepts must be one that changes nothing
				// (off-by-one sizes can share a proof when both are valid).
				assert.NoError(t, ours, "%s: tlog accepts, keeper refuses (%d → %d)", what, m, n)
				return
			}
			assert.Error(t, ours, "%s: tlog refuses (%v), keeper accepts (%d → %d)", what, theirs, m, n)
		}
		for i := range proof {
			bad := append([]merkle.Hash(nil), proof...)
			bad[i][rng.IntN(32)] ^= 1 << rng.IntN(8)
			both(fmt.Sprintf("bit flipped in hash %d", i), p.m, p.n, rootM, rootN, bad)
		}
		if len(proof) > 0 {
			both("last hash left out", p.m, p.n, rootM, rootN, proof[:len(proof)-1])
		}
		both("a hash added", p.m, p.n, rootM, rootN, append(append([]merkle.Hash(nil), proof...), rootN))
		other := rootM
		other[0] ^= 1
		both("another old root", p.m, p.n, other, rootN, proof)
		if p.m > 1 {
			both("old size one less", p.m-1, p.n, rootM, rootN, proof)
		}
		if p.m < p.n {
			both("old size one more", p.m+1, p.n, rootM, rootN, proof)
		}
		both("new size one more", p.m, p.n+1, rootM, rootN, proof)
	}
}

func TestConsistencyOfEqualSizesNeedsEqualRootsAndNoProof(t *testing.T) {
	l := newMemLog(t, 8)
	r5, r6 := l.root(t, 5), l.root(t, 6)
	assert.NoError(t, merkle.VerifyConsistency(5, 5, r5, r5, nil))
	assert.ErrorIs(t, merkle.VerifyConsistency(5, 5, r5, r6, nil), merkle.ErrInconsistent, "two trees of one size with two roots: a fork")
	assert.Error(t, merkle.VerifyConsistency(5, 5, r5, r5, []merkle.Hash{r6}))
	assert.Error(t, merkle.VerifyConsistency(6, 5, r6, r5, l.consistency(t, 5, 6)), "a tree does not shrink")
	assert.Error(t, merkle.VerifyConsistency(0, 5, merkle.Hash{}, r5, nil))
	assert.Error(t, merkle.VerifyConsistency(5, 6, r5, r6, nil), "different sizes need a proof")
}
