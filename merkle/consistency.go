package merkle

import (
	"errors"
	"fmt"
)

// ErrInconsistent is returned when a consistency proof does not lead from
// one root to the other: the larger tree does not extend the smaller one, or
// the proof is not the one for these sizes.
var ErrInconsistent = errors.New("merkle: consistency proof does not join the two roots")

// VerifyConsistency checks that the tree of size n and root rootN holds, as
// its first m leaves, the tree of size m and root rootM, by the consistency
// proof of RFC 6962 §2.1.2 (hashes as RFC 6962 §2.1.2 orders them), verified
// as in RFC 9162 §2.1.4.2. Equal sizes need an empty proof and equal roots.
func VerifyConsistency(m, n uint64, rootM, rootN Hash, proof []Hash) error {
	switch {
	case m == 0:
		return fmt.Errorf("merkle: consistency from an empty tree proves nothing (sizes %d and %d)", m, n)
	case m > n:
		return fmt.Errorf("merkle: consistency from size %d to the smaller size %d", m, n)
	case m == n:
		if len(proof) != 0 {
			return fmt.Errorf("merkle: trees of one size %d need an empty consistency proof, got %d hashes", m, len(proof))
		}
		if rootM != rootN {
			return ErrInconsistent
		}
		return nil
	case len(proof) == 0:
		return fmt.Errorf("merkle: empty consistency proof from size %d to %d", m, n)
	}
	// When m is a power of two the smaller tree is a whole subtree of the
	// larger, whose hash the verifier already holds: the proof leaves it out.
	if m&(m-1) == 0 {
		proof = append([]Hash{rootM}, proof...)
	}
	fn, sn := m-1, n-1
	for fn&1 == 1 {
		fn >>= 1
		sn >>= 1
	}
	fr, sr := proof[0], proof[0]
	for _, c := range proof[1:] {
		if sn == 0 {
			return fmt.Errorf("merkle: consistency proof from size %d to %d has too many hashes (%d)", m, n, len(proof))
		}
		if fn&1 == 1 || fn == sn {
			fr = NodeHash(c, fr)
			sr = NodeHash(c, sr)
			for fn&1 == 0 && fn != 0 {
				fn >>= 1
				sn >>= 1
			}
		} else {
			sr = NodeHash(sr, c)
		}
		fn >>= 1
		sn >>= 1
	}
	if sn != 0 {
		return fmt.Errorf("merkle: consistency proof from size %d to %d has too few hashes (%d)", m, n, len(proof))
	}
	if fr != rootM || sr != rootN {
		return ErrInconsistent
	}
	return nil
}
