package merkle

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// recursiveRoot is RFC 6962 §2.1's definition, written literally, to check the
// level-by-level builder against.
func recursiveRoot(leaves [][]byte) Hash {
	if len(leaves) == 1 {
		return LeafHash(leaves[0])
	}
	k := 1
	for k*2 < len(leaves) {
		k *= 2
	}
	return NodeHash(recursiveRoot(leaves[:k]), recursiveRoot(leaves[k:]))
}

func leaves(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		d := sha256.Sum256([]byte(fmt.Sprint(i)))
		out[i] = d[:]
	}
	return out
}

func TestRootMatchesRFC6962Definition(t *testing.T) {
	for n := 1; n <= 70; n++ {
		tr, err := Build(leaves(n))
		require.NoError(t, err)
		assert.Equal(t, recursiveRoot(leaves(n)), tr.Root(), "n=%d", n)
	}
}

func TestKnownRootOfCertificateTransparencyTestVector(t *testing.T) {
	// The 8-leaf tree of RFC 6962's reference test data (certificate-transparency-go).
	raw := []string{"", "00", "10", "2021", "3031", "40414243", "5051525354555657", "606162636465666768696a6b6c6d6e6f"}
	var ls [][]byte
	for _, s := range raw {
		b, err := hex.DecodeString(s)
		require.NoError(t, err)
		ls = append(ls, b)
	}
	tr, err := Build(ls)
	require.NoError(t, err)
	root := tr.Root()
	assert.Equal(t, "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328", hex.EncodeToString(root[:]))
}

func TestEveryPathRecomputesTheRoot(t *testing.T) {
	for _, n := range []int{1, 2, 3, 5, 8, 13, 64, 100, 1024, 1025} {
		ls := leaves(n)
		tr, err := Build(ls)
		require.NoError(t, err)
		for i := range ls {
			p, err := tr.Path(i)
			require.NoError(t, err)
			require.NoError(t, Verify(ls[i], i, n, p, tr.Root()), "n=%d i=%d", n, i)
		}
	}
}

func TestPathsGivesEveryLeafsAuditPath(t *testing.T) {
	var sizes []int
	for n := 1; n <= 70; n++ {
		sizes = append(sizes, n)
	}
	sizes = append(sizes, 100, 1024, 1025, 4097)
	for _, n := range sizes {
		ls := leaves(n)
		tr, err := Build(ls)
		require.NoError(t, err)
		paths := tr.Paths()
		require.Len(t, paths, n)
		for i, p := range paths {
			require.NoError(t, Verify(ls[i], i, n, p, tr.Root()), "n=%d i=%d", n, i)
			one, err := tr.Path(i)
			require.NoError(t, err)
			require.Equal(t, len(one), len(p), "n=%d i=%d", n, i)
			for j := range one {
				require.Equal(t, one[j], p[j], "n=%d i=%d j=%d", n, i, j)
			}
		}
	}
}

func TestTamperedProofIsRejected(t *testing.T) {
	ls := leaves(13)
	tr, err := Build(ls)
	require.NoError(t, err)
	p, err := tr.Path(6)
	require.NoError(t, err)

	assert.ErrorIs(t, Verify(ls[7], 6, 13, p, tr.Root()), ErrProofMismatch, "other leaf")
	assert.Error(t, Verify(ls[6], 7, 13, p, tr.Root()), "other index")
	last, err := tr.Path(12)
	require.NoError(t, err)
	assert.Error(t, Verify(ls[12], 12, 14, last, tr.Root()), "other size")
	bad := append([]Hash(nil), p...)
	bad[1][0] ^= 1
	assert.ErrorIs(t, Verify(ls[6], 6, 13, bad, tr.Root()), ErrProofMismatch, "flipped path bit")
	assert.Error(t, Verify(ls[6], 6, 13, p[:len(p)-1], tr.Root()), "short path")
	assert.Error(t, Verify(ls[6], 6, 13, append(p, p[0]), tr.Root()), "long path")
	_, err = tr.Path(13)
	assert.Error(t, err)
	_, err = Build(nil)
	assert.Error(t, err)
}

// FuzzProof builds trees of fuzzed sizes and checks every path verifies, and
// that RootFromPath never panics on arbitrary indexes, sizes and paths.
func FuzzProof(f *testing.F) {
	f.Add(uint16(5), uint16(3), []byte{1, 2, 3}, int64(3), int64(5))
	f.Add(uint16(1), uint16(0), []byte{}, int64(-1), int64(0))
	f.Fuzz(func(t *testing.T, n, i uint16, junk []byte, idx, size int64) {
		size16 := int(n%300) + 1
		ls := leaves(size16)
		tr, err := Build(ls)
		if err != nil {
			t.Fatal(err)
		}
		k := int(i) % size16
		p, err := tr.Path(k)
		if err != nil {
			t.Fatal(err)
		}
		if err := Verify(ls[k], k, size16, p, tr.Root()); err != nil {
			t.Fatalf("n=%d i=%d: %v", size16, k, err)
		}
		var bogus []Hash
		for len(junk) >= 32 {
			var h Hash
			copy(h[:], junk)
			bogus = append(bogus, h)
			junk = junk[32:]
		}
		_, _ = RootFromPath(ls[0], int(idx), int(size), bogus)
	})
}

func TestATreeRebuiltFromItsLeafHashesHasTheSameRootAndPaths(t *testing.T) {
	for _, n := range []int{1, 2, 3, 7, 1024, 1025} {
		built, err := Build(leaves(n))
		require.NoError(t, err)
		hashes := append([]Hash(nil), built.LeafHashes()...)
		rebuilt, err := FromLeafHashes(hashes)
		require.NoError(t, err)
		require.Equal(t, built.Root(), rebuilt.Root(), "n=%d", n)
		require.Equal(t, built.Paths(), rebuilt.Paths(), "n=%d", n)
	}
	_, err := FromLeafHashes(nil)
	require.Error(t, err)
}
