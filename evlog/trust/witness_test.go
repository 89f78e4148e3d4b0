package trust_test

import (
	"crypto/sha256"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/evlog/trust"
)

func testWitness(t *testing.T, name string) *evlog.Witness {
	t.Helper()
	seed := sha256.Sum256([]byte(name))
	w, err := evlog.NewWitness(name, seed[:])
	require.NoError(t, err)
	return w
}

// signedBy is a checkpoint of size signed by the log and cosigned by ws.
func signedBy(t *testing.T, log *evlog.Signer, size uint64, ws ...*evlog.Witness) []byte {
	t.Helper()
	c := evlog.Checkpoint{Origin: log.Origin(), Size: size, Root: sha256.Sum256([]byte{byte(size)})}
	signed, err := log.Sign(c)
	require.NoError(t, err)
	for _, w := range ws {
		line, err := w.Cosign(c.Body(), time.Unix(1_780_000_000, 0))
		require.NoError(t, err)
		signed = append(signed, line...)
	}
	return signed
}

// witnessedRoot lists a, b and c from size 0 and asks for 2 of them from
// size 10.
func witnessedRoot(t *testing.T) (trust.Root, *evlog.Signer, [3]*evlog.Witness) {
	t.Helper()
	r, s := newRoot(t)
	ws := [3]*evlog.Witness{testWitness(t, "a.example/w"), testWitness(t, "b.example/w"), testWitness(t, "c.example/w")}
	for _, w := range ws {
		changed, err := r.AddWitness(w.Key().Name, w.Key().Text, 0)
		require.NoError(t, err)
		require.True(t, changed)
	}
	changed, err := r.RequireQuorum(2, 10)
	require.NoError(t, err)
	require.True(t, changed)
	return r, s, ws
}

func TestACheckpointIsTakenOnlyWithTheQuorumOfListedWitnessesItsSizeNeeds(t *testing.T) {
	r, log, w := witnessedRoot(t)
	other := testWitness(t, "unlisted.example/w")

	_, cosigs, err := r.OpenCheckpoint(signedBy(t, log, 12, w[0], w[2]))
	require.NoError(t, err)
	assert.Len(t, cosigs, 2)

	_, _, err = r.OpenCheckpoint(signedBy(t, log, 9))
	assert.NoError(t, err, "below the quorum's first size no cosignature is needed: a quorum added later fails no earlier receipt")

	for name, signed := range map[string][]byte{
		"one witness":                  signedBy(t, log, 12, w[1]),
		"none":                         signedBy(t, log, 12),
		"one witness twice":            signedBy(t, log, 12, w[1], w[1]),
		"one listed and one unlisted":  signedBy(t, log, 12, w[1], other),
		"a listed witness's cosig bad": corruptLast(signedBy(t, log, 12, w[0], w[1], w[2])),
	} {
		_, _, err := r.OpenCheckpoint(signed)
		var qe *trust.QuorumError
		require.True(t, errors.As(err, &qe), "%s: %v", name, err)
		assert.Equal(t, uint64(12), qe.Size, name)
	}

	_, _, err = r.OpenCheckpoint(signedBy(t, testLogSigner(t, log.Origin()), 12, w[0], w[1]))
	require.Error(t, err, "cosignatures do not stand in for the log's signature")
	assert.False(t, errors.As(err, new(*trust.QuorumError)))
}

func corruptLast(signed []byte) []byte {
	s := string(signed)
	i := strings.LastIndex(s, " ") + 10
	b := []byte(s)
	b[i] ^= 'A' ^ 'B'
	if b[i] == '\n' || b[i] == '+' || b[i] == '/' {
		b[i] = 'C'
	}
	return b
}

func testLogSigner(t *testing.T, origin string) *evlog.Signer {
	t.Helper()
	skey, _, err := evlog.GenerateKey(origin)
	require.NoError(t, err)
	s, err := evlog.NewSigner(skey, origin)
	require.NoError(t, err)
	return s
}

func TestARetiredWitnessCountsOnlyForTheSizesBeforeItsRetirement(t *testing.T) {
	r, log, w := witnessedRoot(t)
	before, err := trust.Parse(r.Marshal())
	require.NoError(t, err)
	require.NoError(t, r.RetireWitness("c.example/w", 20))
	require.NoError(t, trust.Extends(before, r))

	_, _, err = r.OpenCheckpoint(signedBy(t, log, 19, w[0], w[2]))
	assert.NoError(t, err)
	_, _, err = r.OpenCheckpoint(signedBy(t, log, 20, w[0], w[2]))
	assert.Error(t, err, "c's cosignature no longer counts at 20")

	assert.Error(t, r.RetireWitness("b.example/w", 30), "two of one listed witness cannot be a quorum of two")
	_, err = r.AddWitness("c.example/w", w[2].Key().Text, 40)
	assert.Error(t, err, "a retired witness stays retired")
}

func TestAQuorumIsNeverLoweredNorAWitnessRemoved(t *testing.T) {
	r, _, _ := witnessedRoot(t)
	_, err := r.RequireQuorum(1, 50)
	assert.Error(t, err)
	changed, err := r.RequireQuorum(2, 50)
	require.NoError(t, err)
	assert.False(t, changed)

	lowered := r
	lowered.Witnesses.Quorum = append([]trust.QuorumStep(nil), r.Witnesses.Quorum...)
	lowered.Witnesses.Quorum = append(lowered.Witnesses.Quorum, trust.QuorumStep{From: 100, Witnesses: 1})
	assert.ErrorContains(t, lowered.Check(), "never lowered")
	assert.Error(t, trust.Extends(r, lowered))

	moved := r
	moved.Witnesses.Quorum = []trust.QuorumStep{{From: 1000, Witnesses: 2}}
	assert.Error(t, trust.Extends(r, moved), "a step moved to a later size lowers the quorum below it")

	removed := r
	removed.Witnesses.List = r.Witnesses.List[1:]
	assert.Error(t, trust.Extends(r, removed))

	raised := r
	raised.Witnesses.Quorum = append(append([]trust.QuorumStep(nil), r.Witnesses.Quorum...), trust.QuorumStep{From: 100, Witnesses: 3})
	assert.NoError(t, trust.Extends(r, raised))

	tooMany := r
	tooMany.Witnesses.Quorum = []trust.QuorumStep{{From: 10, Witnesses: 4}}
	assert.ErrorContains(t, tooMany.Check(), "need 4 cosignatures")
}

func TestAVersion1RootIsReadAndWrittenAsItCameAndAskedForNoQuorum(t *testing.T) {
	r, _ := newRoot(t)
	v1 := strings.Replace(string(r.Marshal()), trust.MediaType, trust.MediaTypeV1, 1)
	v1 = strings.Replace(v1, "\"witnesses\": {\n    \"list\": [],\n    \"quorum\": []\n  }", "\"witnesses\": {\n    \"keys\": [],\n    \"quorum\": 0\n  }", 1)
	got, err := trust.Parse([]byte(v1))
	require.NoError(t, err)
	assert.Equal(t, v1, string(got.Marshal()))
	assert.Equal(t, 0, got.Witnesses.QuorumAt(1<<40))

	_, err = trust.Parse([]byte(strings.Replace(v1, `"quorum": 0`, `"quorum": 1`, 1)))
	assert.ErrorContains(t, err, "version 2")
	_, err = trust.Parse([]byte(strings.Replace(v1, `"keys": []`, `"list": []`, 1)))
	assert.Error(t, err, "a version 1 root is read in version 1's shape only")

	w := testWitness(t, "a.example/w")
	upgraded := got
	changed, err := upgraded.AddWitness(w.Key().Name, w.Key().Text, 7)
	require.NoError(t, err)
	require.True(t, changed)
	assert.Equal(t, trust.MediaType, upgraded.MediaType, "listing a witness makes the root version 2")
	assert.NoError(t, trust.Extends(got, upgraded))
	assert.Error(t, trust.Extends(upgraded, got))
}
