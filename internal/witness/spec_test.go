package witness_test

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"
)

// specRequest is the example add-checkpoint request body of
// c2sp.org/tlog-witness, byte for byte. The spec gives no verifier key for
// its log, example.com/behind-the-sofa, so no witness can cosign it: the
// test replays it for the answers the spec orders without the key, and
// writes its other requests by hand from the spec's grammar.
const specRequest = `old 20852014
PlRNCrwHpqhGrupue0L7gxbjbMiKA9temvuZZDDpkaw=
jrJZDmY8Y7SyJE0MWLpLozkIVMSMZcD5kvuKxPC3swk=
5+pKlUdi2LeF/BcMHBn+Ku6yhPGNCswZZD1X/6QgPd8=
/6WVhPs2CwSsb5rYBH5cjHV/wSmA79abXAwhXw3Kj/0=

example.com/behind-the-sofa
20852163
CsUYapGGPo4dkMgIAUqom/Xajj7h2fB2MPA3j2jxq2I=

— example.com/behind-the-sofa Az3grlgtzPICa5OS8npVmf1Myq/5IZniMp+ZJurmRDeOoRDe4URYN7u5/Zhcyv2q1gGzGku9nTo+zyWE+xeMcTOAYQ8=
— example.com/behind-the-sofa opLqBQsREYCgu6xQkYQwJr9fo45a62DN9EdmHXnZdXNqlcVGlCum2Wks+49/V6267UEjw6QUXTS5Rovnzv++qbSzm9Q=
`

// specResponse is the spec's example 200 answer: three Ed25519
// cosignature lines.
const specResponse = `— witness.example/w1 CMp+6LWBU0anHGH5aNDTJkH/gj79sG+T6+iP2ThYN5krrDJbR1HDnucjL39QsZTSvVjyQLrdk3DXDqI5G2HgLatVs0pWh6Up69HVOw==
— witness.example/w1 I7rEps0pvK2UqkS2gSpVUDhrhVtQV9lgF6pRrWAvjJHjyWpW7VcE3SiOlVlbQNt64vWhO+DlkL0+UfzuOBMh9ChdMkP1vi/lCAsmlw==
— witness.example/w2 AWui8Sk55XjYLOijihBjhqEH6nS1ndDymE0a+6idX7pLcnoB+dhnz0854aLZgrrKbYKA7nC3HNJhm/kWl7oJlqU3rXXvpysAdyP3wQ==
`

// signatureLine is a note signature line as the spec writes one: U+2014,
// a space, the key name, a space, base64, a newline.
var signatureLine = regexp.MustCompile(`^— (\S+) ([A-Za-z0-9+/]+={0,2})\n$`)

func TestTheSpecsExampleRequestIsReadAndRefusedWithoutItsLogsKey(t *testing.T) {
	// A witness of another log does not know the origin: 404.
	w := serve(t, newMemLog(t, "example.com/log"))
	r := w.post(t, []byte(specRequest))
	assert.Equal(t, http.StatusNotFound, r.status, "%s", r.body)

	// One that witnesses example.com/behind-the-sofa under a key of its
	// own ignores the example's signatures, by keys it does not know,
	// and finds none by the key it trusts: 403.
	sofa := serve(t, newMemLog(t, "example.com/behind-the-sofa"))
	r = sofa.post(t, []byte(specRequest))
	assert.Equal(t, http.StatusForbidden, r.status, "%s", r.body)
	assert.Empty(t, refused(t, sofa), "not the log's key: no evidence")
}

// Requests written from the spec's grammar, not by keeper's encoder, get
// the answers the spec orders; the cosignatures verify with x/mod's
// note.Open and a cosignature/v1 verifier written here from
// c2sp.org/tlog-cosignature, not evlog's.
func TestRequestsWrittenFromTheSpecsGrammarGetTheAnswersItOrders(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	w := serve(t, log)
	logVerifier, err := note.NewVerifier(log.signer.Key().Text)
	require.NoError(t, err)
	witnessVerifier := newSpecVerifier(t, w.Key().Text)

	// The spec's own example answer has the shape the test holds the
	// witness's to.
	lines := strings.SplitAfter(specResponse, "\n")
	require.Len(t, lines, 4, "three lines, each ending in a newline")
	for _, line := range lines[:3] {
		m := signatureLine.FindStringSubmatch(line)
		require.NotNil(t, m, line)
		raw, err := base64.StdEncoding.DecodeString(m[2])
		require.NoError(t, err)
		require.Len(t, raw, 4+8+64, "key ID, timestamp, Ed25519 signature")
	}
	verify := func(checkpoint []byte, r reply) {
		t.Helper()
		require.Equal(t, http.StatusOK, r.status, "%s", r.body)
		assert.Equal(t, "text/plain; charset=utf-8", r.contentType)
		m := signatureLine.FindStringSubmatch(string(r.body))
		require.NotNil(t, m, "one signature line: %q", r.body)
		assert.Equal(t, "witness.example/w1", m[1])
		raw, err := base64.StdEncoding.DecodeString(m[2])
		require.NoError(t, err)
		assert.Len(t, raw, 4+8+64)
		n, err := note.Open(cosigned(checkpoint, r), note.VerifierList(logVerifier, witnessVerifier))
		require.NoError(t, err)
		require.Len(t, n.Sigs, 2, "the log's signature and the witness's cosignature")
		assert.Equal(t, w.clock.Now(), witnessVerifier.last, "the cosignature's timestamp")
	}

	five := log.checkpoint(t, 5)
	verify(five, w.post(t, []byte("old 0\n\n"+string(five))))

	eight := log.checkpoint(t, 8)
	r := w.post(t, []byte("old 0\n\n"+string(eight)))
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, "text/x.tlog.size", r.contentType)
	assert.Equal(t, []byte("5\n"), r.body)

	var proof strings.Builder
	for _, h := range log.proof(t, 5, 8) {
		proof.WriteString(base64.StdEncoding.EncodeToString(h[:]) + "\n")
	}
	verify(eight, w.post(t, []byte("old 5\n"+proof.String()+"\n"+string(eight))))

	// A checkpoint with an extension line: the cosignature covers the
	// whole note body (c2sp.org/tlog-cosignature).
	root := log.root(t, 8)
	extended, err := log.signer.SignText("example.com/log\n8\n" + base64.StdEncoding.EncodeToString(root[:]) + "\nan extension line\n")
	require.NoError(t, err)
	verify(extended, w.post(t, []byte("old 8\n\n"+string(extended))))
}

func TestTheSpecsChecksOfSizeZeroAnswer422(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	w := serve(t, log)

	// A checkpoint of size zero must have the empty tree's root.
	notEmpty, err := log.signer.SignText("example.com/log\n0\n" + base64.StdEncoding.EncodeToString(make([]byte, 32)) + "\n")
	require.NoError(t, err)
	assert.Equal(t, http.StatusUnprocessableEntity, w.post(t, []byte("old 0\n\n"+string(notEmpty))).status)

	// From old size zero the proof must be empty.
	ten := log.checkpoint(t, 10)
	hash := log.root(t, 3)
	assert.Equal(t, http.StatusUnprocessableEntity, w.post(t, []byte("old 0\n"+base64.StdEncoding.EncodeToString(hash[:])+"\n\n"+string(ten))).status)

	// The empty tree itself is cosigned.
	empty, err := log.signer.SignText("example.com/log\n0\n47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n")
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, w.post(t, []byte("old 0\n\n"+string(empty))).status)
	assert.Len(t, refused(t, w), 2, "both refusals were signed by the log's key")
}

// specVerifier checks Ed25519 cosignatures (cosignature/v1) as
// c2sp.org/tlog-cosignature defines them, for note.Open.
type specVerifier struct {
	name string
	pub  ed25519.PublicKey
	last time.Time // the timestamp of the last signature verified
}

// newSpecVerifier reads a vkey of type 0x04: <name>+<key ID>+base64(0x04 ‖ key).
func newSpecVerifier(t *testing.T, vkey string) *specVerifier {
	parts := strings.Split(vkey, "+")
	require.GreaterOrEqual(t, len(parts), 3, vkey)
	raw, err := base64.StdEncoding.DecodeString(strings.Join(parts[2:], "+"))
	require.NoError(t, err)
	require.Len(t, raw, 33)
	require.Equal(t, byte(0x04), raw[0])
	return &specVerifier{name: parts[0], pub: raw[1:]}
}

func (v *specVerifier) Name() string { return v.name }

// KeyHash is SHA-256(<name> || "\n" || 0x04 || public key)[:4].
func (v *specVerifier) KeyHash() uint32 {
	h := sha256.Sum256(append(append([]byte(v.name+"\n"), 0x04), v.pub...))
	return binary.BigEndian.Uint32(h[:4])
}

// Verify checks a timestamped_signature (u64 timestamp, then the
// signature) over "cosignature/v1\ntime <timestamp>\n" and the note body.
func (v *specVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != 8+ed25519.SignatureSize {
		return false
	}
	ts := binary.BigEndian.Uint64(sig[:8])
	signed := append([]byte("cosignature/v1\ntime "+strconv.FormatUint(ts, 10)+"\n"), msg...)
	if !ed25519.Verify(v.pub, signed, sig[8:]) {
		return false
	}
	v.last = time.Unix(int64(ts), 0)
	return true
}
