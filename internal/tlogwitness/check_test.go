package tlogwitness_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/tlogwitness"
)

// memLog is a log of n entries kept in memory, with its key: it signs
// checkpoints and proves consistency as keeper's log does.
type memLog struct {
	signer  *evlog.Signer
	entries int64
	hashes  []tlog.Hash
	salt    string // tells one history's entries from another's
}

func newMemLog(t *testing.T, origin string) *memLog {
	skey, _, err := evlog.GenerateKey(origin)
	require.NoError(t, err)
	s, err := evlog.NewSigner(skey, origin)
	require.NoError(t, err)
	return &memLog{signer: s}
}

func (l *memLog) ReadHashes(idx []int64) ([]tlog.Hash, error) {
	out := make([]tlog.Hash, len(idx))
	for i, x := range idx {
		out[i] = l.hashes[x]
	}
	return out, nil
}

// grow appends entries until the log has n.
func (l *memLog) grow(t *testing.T, n int64) {
	for ; l.entries < n; l.entries++ {
		hs, err := tlog.StoredHashes(l.entries, []byte(fmt.Sprint(l.salt, "entry ", l.entries)), l)
		require.NoError(t, err)
		l.hashes = append(l.hashes, hs...)
	}
}

func (l *memLog) root(t *testing.T, n int64) [32]byte {
	h, err := tlog.TreeHash(n, l)
	require.NoError(t, err)
	return h
}

// request is an add-checkpoint of the log at size n, from old.
func (l *memLog) request(t *testing.T, old, n int64) tlogwitness.AddCheckpoint {
	l.grow(t, n)
	signed, err := l.signer.Sign(evlog.Checkpoint{Origin: l.signer.Origin(), Size: uint64(n), Root: l.root(t, n)})
	require.NoError(t, err)
	r := tlogwitness.AddCheckpoint{OldSize: uint64(old), Checkpoint: signed}
	if old > 0 && old < n {
		p, err := tlog.ProveTree(n, old, l)
		require.NoError(t, err)
		for _, h := range p {
			r.Proof = append(r.Proof, h)
		}
	}
	return r
}

func TestAWitnessCosignsWhatExtendsWhatItCosignedAndRefusesTheRestAsTheProtocolSays(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	keyOf := func(origin string) (evlog.Key, bool) { return log.signer.Key(), origin == log.signer.Origin() }
	empty := tlogwitness.State{Root: tlogwitness.EmptyRoot}

	first := tlogwitness.Check(log.request(t, 0, 10), keyOf, empty)
	require.Equal(t, http.StatusOK, first.Status, first.Reason)
	assert.Equal(t, tlogwitness.State{Size: 10, Root: log.root(t, 10)}, first.Next)

	next := tlogwitness.Check(log.request(t, 10, 25), keyOf, first.Next)
	require.Equal(t, http.StatusOK, next.Status, next.Reason)
	assert.Equal(t, uint64(25), next.Next.Size)

	again := tlogwitness.Check(log.request(t, 25, 25), keyOf, next.Next)
	assert.Equal(t, http.StatusOK, again.Status, "the same checkpoint again is cosigned again")

	stale := tlogwitness.Check(log.request(t, 10, 30), keyOf, next.Next)
	assert.Equal(t, http.StatusConflict, stale.Status)
	assert.Equal(t, uint64(25), stale.Size, "a 409 names the size cosigned last")

	assert.Equal(t, http.StatusBadRequest, tlogwitness.Check(log.request(t, 30, 25), keyOf, next.Next).Status, "an old size beyond the checkpoint")

	other := newMemLog(t, "example.com/other")
	assert.Equal(t, http.StatusNotFound, tlogwitness.Check(other.request(t, 0, 3), keyOf, empty).Status, "a log not witnessed here")

	impostor := newMemLog(t, "example.com/log") // the same origin, another key
	assert.Equal(t, http.StatusForbidden, tlogwitness.Check(impostor.request(t, 25, 30), keyOf, next.Next).Status, "signed by another key")
}

// A fork: the log's own key signs another tree at a size it had, or a tree
// that does not extend it. The witness never cosigns both.
func TestAWitnessRefusesAForkAndARollbackWith422(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	keyOf := func(string) (evlog.Key, bool) { return log.signer.Key(), true }
	st := tlogwitness.Check(log.request(t, 0, 20), keyOf, tlogwitness.State{Root: tlogwitness.EmptyRoot}).Next

	fork := &memLog{signer: log.signer, salt: "fork "} // the log's key, another history
	forked := fork.request(t, 20, 20)
	require.NotEqual(t, log.root(t, 20), fork.root(t, 20))
	assert.Equal(t, http.StatusUnprocessableEntity, tlogwitness.Check(forked, keyOf, st).Status, "another root at a cosigned size")
	assert.Equal(t, http.StatusUnprocessableEntity, tlogwitness.Check(fork.request(t, 20, 30), keyOf, st).Status, "a longer tree that does not extend the cosigned one")

	longer := log.request(t, 20, 40)
	longer.Proof[0][0] ^= 1
	assert.Equal(t, http.StatusUnprocessableEntity, tlogwitness.Check(longer, keyOf, st).Status, "a proof that does not verify")

	fromZero := log.request(t, 0, 40)
	fromZero.Proof = log.request(t, 20, 40).Proof
	assert.Equal(t, http.StatusUnprocessableEntity, tlogwitness.Check(fromZero, keyOf, tlogwitness.State{Root: tlogwitness.EmptyRoot}).Status, "a proof from size 0")

	empty := log.request(t, 0, 0)
	assert.Equal(t, http.StatusOK, tlogwitness.Check(empty, keyOf, tlogwitness.State{Root: tlogwitness.EmptyRoot}).Status, "the empty tree, with its root")
	notEmpty, err := log.signer.Sign(evlog.Checkpoint{Origin: log.signer.Origin(), Size: 0, Root: log.root(t, 20)})
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnprocessableEntity, tlogwitness.Check(tlogwitness.AddCheckpoint{Checkpoint: notEmpty}, keyOf, tlogwitness.State{Root: tlogwitness.EmptyRoot}).Status,
		"size 0 with another root than the empty tree's")
}
