// Package merkle implements the Merkle tree hashing of RFC 6962 (Certificate
// Transparency) over evidence digests: leaf hashes are SHA-256(0x00 ‖ leaf),
// interior nodes SHA-256(0x01 ‖ left ‖ right), and a tree of n leaves splits at
// the largest power of two smaller than n. Inclusion proofs are the audit paths
// of RFC 6962 §2.1.1 and are verified as in RFC 9162 §2.1.3.2.
package merkle

import (
	"crypto/sha256"
	"errors"
	"fmt"
)

// Hash is a SHA-256 value: a leaf, a node or a root.
type Hash [32]byte

// LeafHash returns the RFC 6962 hash of one leaf.
func LeafHash(leaf []byte) Hash {
	h := sha256.New()
	h.Write([]byte{0x00})
	h.Write(leaf)
	var out Hash
	h.Sum(out[:0])
	return out
}

// NodeHash returns the RFC 6962 hash of an interior node.
func NodeHash(left, right Hash) Hash {
	var buf [65]byte
	buf[0] = 0x01
	copy(buf[1:33], left[:])
	copy(buf[33:], right[:])
	return sha256.Sum256(buf[:])
}

// Tree holds every level of a tree built over its leaves, so that the root and
// all audit paths come from one pass of hashing.
type Tree struct {
	levels [][]Hash // levels[0] are the leaf hashes
}

// Build hashes the leaves into a tree. It fails on an empty leaf list: RFC 6962
// defines the empty tree's root, but anchoring nothing is a caller's mistake.
func Build(leaves [][]byte) (*Tree, error) {
	level := make([]Hash, len(leaves))
	for i, l := range leaves {
		level[i] = LeafHash(l)
	}
	return FromLeafHashes(level)
}

// FromLeafHashes builds the tree over leaves already hashed (LeafHash), in
// leaf order: the tree Build makes of the leaves themselves. The tree keeps
// hashes as its leaf level.
func FromLeafHashes(hashes []Hash) (*Tree, error) {
	if len(hashes) == 0 {
		return nil, errors.New("merkle: no leaves")
	}
	level := hashes
	t := &Tree{levels: [][]Hash{level}}
	// Pairing left to right and promoting an odd last node unchanged yields the
	// same root as RFC 6962's split at the largest power of two below n.
	for len(level) > 1 {
		next := make([]Hash, 0, (len(level)+1)/2)
		for i := 0; i+1 < len(level); i += 2 {
			next = append(next, NodeHash(level[i], level[i+1]))
		}
		if len(level)%2 == 1 {
			next = append(next, level[len(level)-1])
		}
		t.levels = append(t.levels, next)
		level = next
	}
	return t, nil
}

// LeafHashes are the hashes of the leaves, in leaf order (not a copy).
func (t *Tree) LeafHashes() []Hash { return t.levels[0] }

// Size is the number of leaves.
func (t *Tree) Size() int { return len(t.levels[0]) }

// Root is the tree head.
func (t *Tree) Root() Hash { return t.levels[len(t.levels)-1][0] }

// Path returns the audit path of leaf index, from the leaf's sibling upwards.
func (t *Tree) Path(index int) ([]Hash, error) {
	if index < 0 || index >= t.Size() {
		return nil, fmt.Errorf("merkle: leaf index %d out of range [0,%d)", index, t.Size())
	}
	return t.appendPath(nil, index), nil
}

// appendPath appends leaf index's audit path to dst.
func (t *Tree) appendPath(dst []Hash, index int) []Hash {
	for _, level := range t.levels[:len(t.levels)-1] {
		if sibling := index ^ 1; sibling < len(level) {
			dst = append(dst, level[sibling])
		}
		index /= 2
	}
	return dst
}

// Paths returns every leaf's audit path, paths[i] being Path(i): O(n log n)
// hashes copied in all, into one allocation shared by the paths.
func (t *Tree) Paths() [][]Hash {
	n := t.Size()
	depth := len(t.levels) - 1
	all := make([]Hash, 0, n*depth)
	paths := make([][]Hash, n)
	for i := range paths {
		start := len(all)
		all = t.appendPath(all, i)
		paths[i] = all[start:len(all):len(all)]
	}
	return paths
}

// ErrProofMismatch is returned when a proof does not lead to the expected root.
var ErrProofMismatch = errors.New("merkle: path does not recompute the root")

// RootFromPath recomputes the root of a tree of size leaves from one leaf, its
// index and its audit path (RFC 9162 §2.1.3.2).
func RootFromPath(leaf []byte, index, size int, path []Hash) (Hash, error) {
	if size <= 0 || index < 0 || index >= size {
		return Hash{}, fmt.Errorf("merkle: leaf index %d out of range for tree size %d", index, size)
	}
	fn, sn := index, size-1
	r := LeafHash(leaf)
	for _, p := range path {
		if sn == 0 {
			return Hash{}, fmt.Errorf("merkle: path has %d hashes, too many for tree size %d", len(path), size)
		}
		if fn&1 == 1 || fn == sn {
			r = NodeHash(p, r)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			r = NodeHash(r, p)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return Hash{}, fmt.Errorf("merkle: path has %d hashes, too few for tree size %d", len(path), size)
	}
	return r, nil
}

// Verify checks that leaf sits at index in the tree of the given size and root.
func Verify(leaf []byte, index, size int, path []Hash, root Hash) error {
	got, err := RootFromPath(leaf, index, size, path)
	if err != nil {
		return err
	}
	if got != root {
		return ErrProofMismatch
	}
	return nil
}
