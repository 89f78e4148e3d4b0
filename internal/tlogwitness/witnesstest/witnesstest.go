// Package witnesstest is the one check the witness's tests (its own, and
// the crash test that SIGKILLs `keeper witness`) hold what a witness
// cosigned to: every cosignature verifies, and no two checkpoints it
// cosigned are of two histories.
package witnesstest

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/tlogwitness"
)

// Cosigned is one checkpoint a witness cosigned: the note with its
// cosignature line, its size and root, and the history it was signed over
// (to prove a smaller checkpoint a prefix of it).
type Cosigned struct {
	Note    []byte
	Size    int64
	Root    [32]byte
	History tlog.HashReader
}

// RequireOneHistory fails t unless every note is signed by logKey and
// cosigned by witness, over the size and root given, and every two
// checkpoints are of one history: one root per size, and the smaller a
// provable prefix of the larger in the history the larger came from.
func RequireOneHistory(t testing.TB, logKey evlog.Key, witness evlog.WitnessKey, cosigned []Cosigned) {
	t.Helper()
	seen := map[string]bool{}
	var distinct []Cosigned
	for _, c := range cosigned {
		got, sigs, err := evlog.OpenCosigned(c.Note, logKey, []evlog.WitnessKey{witness})
		require.NoError(t, err, "size %d", c.Size)
		require.Len(t, sigs, 1, "size %d: the witness's cosignature", c.Size)
		require.Equal(t, c.Root, got.Root, "size %d", c.Size)
		if k := fmt.Sprint(c.Size, c.Root); !seen[k] {
			seen[k] = true
			distinct = append(distinct, c)
		}
	}
	for i, a := range distinct {
		for _, b := range distinct[i+1:] {
			if a.Size > b.Size {
				a, b = b, a
			}
			switch {
			case a.Size == b.Size:
				require.Equal(t, a.Root, b.Root, "two roots cosigned at size %d", a.Size)
			case a.Size == 0: // the empty tree is a prefix of every tree
				require.Equal(t, tlogwitness.EmptyRoot, a.Root, "the empty tree's root")
			default:
				proof, err := tlog.ProveTree(b.Size, a.Size, b.History)
				require.NoError(t, err)
				require.NoError(t, tlog.CheckTree(proof, b.Size, b.Root, a.Size, a.Root), "cosigned sizes %d and %d are not of one history", a.Size, b.Size)
			}
		}
	}
}
