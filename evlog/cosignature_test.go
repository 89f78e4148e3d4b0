package evlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The signed message is the spec's example, byte for byte
// (c2sp.org/tlog-cosignature, "Ed25519 signed message").
func TestTheCosignedMessageIsTheSpecsExample(t *testing.T) {
	body := "example.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
	want := "cosignature/v1\ntime 1679315147\nexample.com/behind-the-sofa\n20852163\nCsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=\n"
	assert.Equal(t, want, string(cosignedMessage(body, 1679315147)))
}

func testWitness(t *testing.T, name string) *Witness {
	t.Helper()
	seed := sha256.Sum256([]byte(name))
	w, err := NewWitness(name, seed[:])
	require.NoError(t, err)
	return w
}

// cosignedCheckpoint is a checkpoint of size signed by log, with lines
// (witness signature lines) appended.
func cosignedCheckpoint(t *testing.T, log *Signer, size uint64, lines ...string) []byte {
	t.Helper()
	signed, err := log.Sign(Checkpoint{Origin: log.Origin(), Size: size, Root: sha256.Sum256([]byte("root"))})
	require.NoError(t, err)
	return append(signed, strings.Join(lines, "")...)
}

func testLog(t *testing.T) *Signer {
	t.Helper()
	skey, _, err := GenerateKey("example.com/log")
	require.NoError(t, err)
	s, err := NewSigner(skey, "example.com/log")
	require.NoError(t, err)
	return s
}

func TestAWitnessKeyIsItsNameItsKeyIDAndType4(t *testing.T) {
	w := testWitness(t, "witness.example/w1")
	k, err := ParseWitnessKey(w.Key().Text)
	require.NoError(t, err)
	assert.Equal(t, w.Key(), k)
	raw, err := base64.StdEncoding.DecodeString(strings.Split(k.Text, "+")[2])
	require.NoError(t, err)
	id := sha256.Sum256(append([]byte("witness.example/w1\n"), raw...))
	assert.Equal(t, uint32(id[0])<<24|uint32(id[1])<<16|uint32(id[2])<<8|uint32(id[3]), k.Hash)
	assert.Equal(t, byte(0x04), raw[0])

	_, logVKey, err := GenerateKey("example.com/log")
	require.NoError(t, err)
	for _, bad := range []string{
		logVKey, // a log's Ed25519 key (type 0x01) is not a cosigner's
		strings.Replace(k.Text, "+", "+0", 1)[:len(k.Text)],
		"witness.example/w1+00000000+" + strings.Split(k.Text, "+")[2], // a key ID that is not the hash
		"no-plus-signs",
		"+" + strings.SplitN(k.Text, "+", 2)[1], // no name
	} {
		_, err := ParseWitnessKey(bad)
		assert.Error(t, err, "%q", bad)
	}
}

func TestACheckpointCosignedByTwoWitnessesNamesBothWithTheirTimes(t *testing.T) {
	log := testLog(t)
	w1, w2, other := testWitness(t, "w1.example"), testWitness(t, "w2.example"), testWitness(t, "unlisted.example")
	body := Checkpoint{Origin: log.Origin(), Size: 42, Root: sha256.Sum256([]byte("root"))}.Body()
	at1, at2 := time.Unix(1_800_000_000, 0).UTC(), time.Unix(1_800_000_005, 0).UTC()
	l1, err := w1.Cosign(body, at1)
	require.NoError(t, err)
	l2, err := w2.Cosign(body, at2)
	require.NoError(t, err)
	l3, err := other.Cosign(body, at2)
	require.NoError(t, err)
	signed := cosignedCheckpoint(t, log, 42, l1, l2, l3)

	c, cosigs, err := OpenCosigned(signed, log.Key(), []WitnessKey{w1.Key(), w2.Key()})
	require.NoError(t, err)
	assert.Equal(t, uint64(42), c.Size)
	assert.ElementsMatch(t, []Cosignature{{"w1.example", at1}, {"w2.example", at2}}, cosigs, "an unlisted witness is ignored")

	_, cosigs, err = OpenCosigned(signed, log.Key(), []WitnessKey{w2.Key()})
	require.NoError(t, err)
	assert.Equal(t, []Cosignature{{"w2.example", at2}}, cosigs)

	_, cosigs, err = OpenCosigned(cosignedCheckpoint(t, log, 42), log.Key(), []WitnessKey{w1.Key()})
	require.NoError(t, err)
	assert.Empty(t, cosigs, "a checkpoint no witness cosigned yet")
}

// A verifier is judged by what it refuses.
func TestACosignatureOfAnotherCheckpointOrTimeOrWithoutTheLogsSignatureIsRefused(t *testing.T) {
	log := testLog(t)
	w := testWitness(t, "w1.example")
	at := time.Unix(1_800_000_000, 0)
	other := Checkpoint{Origin: log.Origin(), Size: 41, Root: sha256.Sum256([]byte("root"))}.Body()
	ofOther, err := w.Cosign(other, at)
	require.NoError(t, err)
	_, _, err = OpenCosigned(cosignedCheckpoint(t, log, 42, ofOther), log.Key(), []WitnessKey{w.Key()})
	assert.Error(t, err, "a cosignature of size 41 moved onto size 42")

	body := Checkpoint{Origin: log.Origin(), Size: 42, Root: sha256.Sum256([]byte("root"))}.Body()
	line, err := w.Cosign(body, at)
	require.NoError(t, err)
	fields := strings.Fields(line)
	raw, err := base64.StdEncoding.DecodeString(fields[2])
	require.NoError(t, err)
	raw[11]++ // the time one second later, the signature unchanged
	retimed := "— " + fields[1] + " " + base64.StdEncoding.EncodeToString(raw) + "\n"
	_, _, err = OpenCosigned(cosignedCheckpoint(t, log, 42, retimed), log.Key(), []WitnessKey{w.Key()})
	assert.Error(t, err, "a cosignature whose time was changed")

	short := "— " + fields[1] + " " + base64.StdEncoding.EncodeToString(raw[:4+64]) + "\n"
	_, _, err = OpenCosigned(cosignedCheckpoint(t, log, 42, short), log.Key(), []WitnessKey{w.Key()})
	assert.Error(t, err, "a signature without its timestamp")

	onlyWitness := []byte(body + "\n" + line)
	_, _, err = OpenCosigned(onlyWitness, log.Key(), []WitnessKey{w.Key()})
	assert.Error(t, err, "cosigned, but not signed by the log")

	_, _, err = OpenCosigned(cosignedCheckpoint(t, log, 42, line), log.Key(), []WitnessKey{{Name: log.Key().Name, Hash: log.Key().Hash, Public: w.Key().Public}})
	assert.Error(t, err, "a witness listed under the log's own key")

	good := cosignedCheckpoint(t, log, 42, line)
	_, cosigs, err := OpenCosigned(good, log.Key(), []WitnessKey{w.Key()})
	require.NoError(t, err)
	require.Len(t, cosigs, 1, "the control: the same lines, unchanged, verify")
	assert.True(t, bytes.HasSuffix(good, []byte(line)))
}

func TestAWitnessSignerKeyRoundTripsAndIsRefusedWithoutEchoingIt(t *testing.T) {
	for range 20 { // base64 holds '+' as often as not
		skey, _, err := GenerateWitnessKey("witness.example/w")
		require.NoError(t, err)
		_, err = ParseWitnessSigner(skey)
		require.NoError(t, err, skey)
	}
	skey, vkey, err := GenerateWitnessKey("witness.example/w")
	require.NoError(t, err)
	w, err := ParseWitnessSigner(skey)
	require.NoError(t, err)
	assert.Equal(t, vkey, w.Key().Text)
	assert.Equal(t, skey, w.SignerKey())
	_, err = ParseWitnessKey(vkey)
	require.NoError(t, err)

	logSKey, _, err := GenerateKey("example.com/log")
	require.NoError(t, err)
	for _, bad := range []string{logSKey, strings.Replace(skey, "witness.example/w", "other.example/w", 1), "PRIVATE+KEY+x+00000000+QUJDRA=="} {
		_, err := ParseWitnessSigner(bad)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), strings.Split(bad, "+")[len(strings.Split(bad, "+"))-1])
	}
}
