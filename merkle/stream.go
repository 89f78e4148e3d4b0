package merkle

import (
	"crypto/sha256"
	"errors"
	"hash"
)

// RootBuilder computes the RFC 6962 root of a stream of leaves in
// O(log n) memory, for trees too large to hold (an epoch's payout lines).
// It gives the same root as Build over the same leaves.
type RootBuilder struct {
	h     hash.Hash
	stack []subtree // perfect subtrees, largest (leftmost) first
	n     int
	buf   [32]byte
}

type subtree struct {
	hash Hash
	size int
}

// NewRootBuilder returns an empty builder.
func NewRootBuilder() *RootBuilder { return &RootBuilder{h: sha256.New()} }

// Add appends one leaf.
func (b *RootBuilder) Add(leaf []byte) {
	b.h.Reset()
	b.h.Write([]byte{0x00})
	b.h.Write(leaf)
	var lh Hash
	copy(lh[:], b.h.Sum(b.buf[:0]))
	b.stack = append(b.stack, subtree{lh, 1})
	b.n++
	// Merge equal-sized neighbours: the stack mirrors n's binary digits.
	for len(b.stack) >= 2 {
		l, r := b.stack[len(b.stack)-2], b.stack[len(b.stack)-1]
		if l.size != r.size {
			break
		}
		b.stack = b.stack[:len(b.stack)-2]
		b.stack = append(b.stack, subtree{NodeHash(l.hash, r.hash), l.size * 2})
	}
}

// Size is the number of leaves added.
func (b *RootBuilder) Size() int { return b.n }

// Root folds the remaining subtrees from the right: RFC 6962 splits a tree at
// the largest power of two below its size, which is exactly the leftmost
// subtree on the stack.
func (b *RootBuilder) Root() (Hash, error) {
	if b.n == 0 {
		return Hash{}, errors.New("merkle: no leaves")
	}
	r := b.stack[len(b.stack)-1].hash
	for i := len(b.stack) - 2; i >= 0; i-- {
		r = NodeHash(b.stack[i].hash, r)
	}
	return r, nil
}
