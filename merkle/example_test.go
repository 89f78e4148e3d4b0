package merkle_test

import (
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/keeperhq/keeper/merkle"
)

// Build a tree over a batch's leaves, take one leaf's audit path and check,
// with nothing but the leaf, its index, the path and the root, that the leaf
// is in the tree.
func Example() {
	leaves := [][]byte{[]byte("alpha"), []byte("beta"), []byte("gamma"), []byte("delta"), []byte("epsilon")}
	tree, err := merkle.Build(leaves)
	if err != nil {
		fmt.Println(err)
		return
	}
	root := tree.Root()
	fmt.Println("size", tree.Size(), "root", hex.EncodeToString(root[:])[:16])

	path, err := tree.Path(2)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("path of leaf 2:", len(path), "hashes")
	fmt.Println("gamma at 2:", merkle.Verify([]byte("gamma"), 2, tree.Size(), path, root))

	err = merkle.Verify([]byte("GAMMA"), 2, tree.Size(), path, root)
	fmt.Println("GAMMA at 2 mismatches:", errors.Is(err, merkle.ErrProofMismatch))

	// A tree too large to hold gets the same root from a stream of leaves.
	b := merkle.NewRootBuilder()
	for _, l := range leaves {
		b.Add(l)
	}
	streamed, err := b.Root()
	fmt.Println("streamed root equal:", err == nil && streamed == root)
	// Output:
	// size 5 root 4fadaf65230be622
	// path of leaf 2: 3 hashes
	// gamma at 2: <nil>
	// GAMMA at 2 mismatches: true
	// streamed root equal: true
}
