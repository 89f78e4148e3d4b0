package merkle_test

import (
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/transparency-dev/merkle/compact"
	"github.com/transparency-dev/merkle/proof"
	"github.com/transparency-dev/merkle/rfc6962"

	"github.com/keeperhq/keeper/merkle"
)

// TestTreesAgreeWithTransparencyDevMerkle checks keeper's tree against an
// implementation nobody here wrote: transparency-dev/merkle, the RFC 6962
// code of Trillian and the Go checksum database. On random trees of 1 to
// 5,000 salted 48-byte leaves (and the sizes around powers of two, where
// splits change), the root from Build, from the streaming RootBuilder and
// from transparency-dev's compact range are equal, and every leaf's audit
// path from Build verifies with transparency-dev's inclusion-proof verifier
// and recomputes the root with keeper's own verifier.
func TestTreesAgreeWithTransparencyDevMerkle(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 2))
	sizes := []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 128, 129, 255, 256, 257, 511, 512, 513, 1023, 1024, 1025, 2047, 2048, 2049, 4095, 4096, 4097, 5000}
	for range 24 {
		sizes = append(sizes, 1+rng.IntN(5000))
	}
	hasher := rfc6962.DefaultHasher
	factory := compact.RangeFactory{Hash: hasher.HashChildren}
	for _, n := range sizes {
		leaves := make([][]byte, n)
		for i := range leaves {
			leaf := make([]byte, 48) // a 16-byte salt and a 32-byte digest, as keeper anchors
			binary.LittleEndian.PutUint64(leaf, rng.Uint64())
			d := sha256.Sum256(leaf[:8])
			copy(leaf[16:], d[:])
			leaves[i] = leaf
		}
		tree, err := merkle.Build(leaves)
		require.NoError(t, err)
		stream := merkle.NewRootBuilder()
		cr := factory.NewEmptyRange(0)
		for _, l := range leaves {
			stream.Add(l)
			require.NoError(t, cr.Append(hasher.HashLeaf(l), nil))
		}
		theirs, err := cr.GetRootHash(nil)
		require.NoError(t, err)
		root := tree.Root()
		require.Equal(t, theirs, root[:], "root of %d leaves", n)
		streamed, err := stream.Root()
		require.NoError(t, err)
		require.Equal(t, root, streamed, "streamed root of %d leaves", n)

		for i, path := range tree.Paths() {
			raw := make([][]byte, len(path))
			for j := range path {
				raw[j] = path[j][:]
			}
			require.NoError(t, proof.VerifyInclusion(hasher, uint64(i), uint64(n), hasher.HashLeaf(leaves[i]), raw, root[:]),
				"leaf %d of %d", i, n)
			require.NoError(t, merkle.Verify(leaves[i], i, n, path, root), "leaf %d of %d", i, n)
		}
	}
}
