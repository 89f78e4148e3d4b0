package merkle

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestStreamedRootEqualsTheBuiltTreesRoot(t *testing.T) {
	for n := 1; n <= 70; n++ {
		leaves := make([][]byte, n)
		b := NewRootBuilder()
		for i := range leaves {
			leaves[i] = []byte(fmt.Sprintf("acct-%d %d", i, i*7))
			b.Add(leaves[i])
		}
		tree, err := Build(leaves)
		require.NoError(t, err)
		root, err := b.Root()
		require.NoError(t, err)
		require.Equal(t, tree.Root(), root, "%d leaves", n)
	}
	_, err := NewRootBuilder().Root()
	require.Error(t, err)
}
