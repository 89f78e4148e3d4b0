package evlog

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"golang.org/x/mod/sumdb/note"
)

// cosignatureAlg is the signature type of an Ed25519 cosignature
// (c2sp.org/tlog-cosignature, cosignature/v1) in its key ID and vkey.
const cosignatureAlg = 0x04

// cosignatureLen is an Ed25519 cosignature's timestamped_signature: an
// 8-byte big-endian POSIX time and a 64-byte signature.
const cosignatureLen = 8 + ed25519.SignatureSize

// WitnessKey is a witness's Ed25519 cosignature key as a verifier key:
// "<name>+<key ID, 8 hex digits>+<base64 of 0x04 ‖ Ed25519 public key>",
// the key ID being SHA-256(name ‖ "\n" ‖ 0x04 ‖ public key)[:4].
type WitnessKey struct {
	Text   string
	Name   string
	Hash   uint32
	Public ed25519.PublicKey
}

// ParseWitnessKey reads a witness's verifier key, refusing any other
// signature type (a log's 0x01 key is not a cosigner's).
func ParseWitnessKey(vkey string) (WitnessKey, error) {
	vkey = strings.TrimSpace(vkey)
	name, rest, ok1 := strings.Cut(vkey, "+")
	hash16, key64, ok2 := strings.Cut(rest, "+")
	h, err1 := strconv.ParseUint(hash16, 16, 32)
	key, err2 := base64.StdEncoding.DecodeString(key64)
	if !ok1 || !ok2 || err1 != nil || err2 != nil || len(hash16) != 8 || name == "" || strings.ContainsAny(name, " \n+") {
		return WitnessKey{}, fmt.Errorf("evlog: witness key %q is not <name>+<key ID>+<key>", shorten(vkey))
	}
	if len(key) != 1+ed25519.PublicKeySize || key[0] != cosignatureAlg {
		return WitnessKey{}, fmt.Errorf("evlog: witness key %q is not an Ed25519 cosignature key (type 0x04)", shorten(vkey))
	}
	k := WitnessKey{Text: vkey, Name: name, Public: ed25519.PublicKey(key[1:])}
	if k.Hash = cosignerKeyID(name, k.Public); uint32(h) != k.Hash {
		return WitnessKey{}, fmt.Errorf("evlog: witness key %q: its key ID is not the hash of its name and key", shorten(vkey))
	}
	return k, nil
}

// cosignerKeyID is SHA-256(name ‖ "\n" ‖ 0x04 ‖ public key)[:4].
func cosignerKeyID(name string, pub ed25519.PublicKey) uint32 {
	h := sha256.New()
	h.Write([]byte(name + "\n"))
	h.Write([]byte{cosignatureAlg})
	h.Write(pub)
	return binary.BigEndian.Uint32(h.Sum(nil))
}

// cosignedMessage is what a cosignature/v1 signs: the header line, the
// time line and the checkpoint's whole note body.
func cosignedMessage(body string, t uint64) []byte {
	return []byte("cosignature/v1\ntime " + strconv.FormatUint(t, 10) + "\n" + body)
}

// witnessVerifier checks a witness's cosignatures as note.Open asks.
type witnessVerifier struct{ k WitnessKey }

func (v witnessVerifier) Name() string    { return v.k.Name }
func (v witnessVerifier) KeyHash() uint32 { return v.k.Hash }
func (v witnessVerifier) Verify(msg, sig []byte) bool {
	if len(sig) != cosignatureLen {
		return false
	}
	t := binary.BigEndian.Uint64(sig[:8])
	return t <= math.MaxInt64 && ed25519.Verify(v.k.Public, cosignedMessage(string(msg), t), sig[8:])
}

// Cosignature is a witness's valid cosignature of a checkpoint: who, and
// when it says it cosigned.
type Cosignature struct {
	Witness string
	Time    time.Time
}

// OpenCosigned checks a checkpoint signed by log and cosigned by witnesses:
// the log's signature is required, and every signature line by a listed
// witness must verify (one that does not refuses the whole note, as a
// signature by a known key that fails does). Lines by other keys are
// ignored. It returns the checkpoint and the valid cosignatures, at most
// one per witness; whether they are a quorum is the caller's rule.
func OpenCosigned(signed []byte, log Key, witnesses []WitnessKey) (Checkpoint, []Cosignature, error) {
	vs := []note.Verifier{log.verifier}
	for _, w := range witnesses {
		if w.Name == log.Name && w.Hash == log.Hash {
			return Checkpoint{}, nil, fmt.Errorf("evlog: witness %q has the log's own key", w.Name)
		}
		vs = append(vs, witnessVerifier{w})
	}
	n, err := note.Open(signed, note.VerifierList(vs...))
	if err != nil {
		return Checkpoint{}, nil, fmt.Errorf("evlog: cosigned checkpoint: %w", err)
	}
	c, err := ParseBody(n.Text)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	if c.Origin != log.Name {
		return Checkpoint{}, nil, fmt.Errorf("evlog: checkpoint origin %q is not the key's %q", c.Origin, log.Name)
	}
	cosigs, err := cosignaturesOf(n, log)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	return c, cosigs, nil
}

// cosignaturesOf lists the verified signatures of n but the log's, once
// per witness, with their times.
func cosignaturesOf(n *note.Note, log Key) ([]Cosignature, error) {
	var out []Cosignature
	logSigned := false
	seen := map[string]bool{}
	for _, s := range n.Sigs {
		if s.Name == log.Name && s.Hash == log.Hash {
			logSigned = true
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(s.Base64)
		if err != nil || len(raw) != 4+cosignatureLen {
			return nil, fmt.Errorf("evlog: cosignature by %q is not a timestamped signature", s.Name)
		}
		if seen[s.Name] {
			continue
		}
		seen[s.Name] = true
		t := binary.BigEndian.Uint64(raw[4:12])
		out = append(out, Cosignature{Witness: s.Name, Time: time.Unix(int64(t), 0).UTC()})
	}
	if !logSigned {
		return nil, errors.New("evlog: cosigned checkpoint: the log's own signature is missing")
	}
	return out, nil
}

// Witness cosigns checkpoints with an Ed25519 cosignature key: the
// witness side of c2sp.org/tlog-cosignature, for keeper's own witness and
// for tests.
type Witness struct {
	key  WitnessKey
	priv ed25519.PrivateKey
}

// NewWitness makes a witness named name from its private key's seed.
func NewWitness(name string, seed []byte) (*Witness, error) {
	if len(seed) != ed25519.SeedSize || name == "" || strings.ContainsAny(name, " \n+") {
		return nil, errors.New("evlog: a witness needs a name without spaces, newlines or '+' and a 32-byte seed")
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	id := cosignerKeyID(name, pub)
	text := fmt.Sprintf("%s+%08x+%s", name, id, base64.StdEncoding.EncodeToString(append([]byte{cosignatureAlg}, pub...)))
	return &Witness{key: WitnessKey{Text: text, Name: name, Hash: id, Public: pub}, priv: priv}, nil
}

// Key is the witness's verifier key.
func (w *Witness) Key() WitnessKey { return w.key }

// Cosign returns the signature line of a cosignature of body (a checkpoint
// note's text) at t, as it is appended to the signed note:
// "— <name> <base64(key ID ‖ time ‖ signature)>\n".
func (w *Witness) Cosign(body string, t time.Time) (string, error) {
	if t.Unix() < 0 {
		return "", errors.New("evlog: a cosignature's time is after 1970")
	}
	ts := uint64(t.Unix())
	raw := make([]byte, 4+cosignatureLen)
	binary.BigEndian.PutUint32(raw, w.key.Hash)
	binary.BigEndian.PutUint64(raw[4:], ts)
	copy(raw[12:], ed25519.Sign(w.priv, cosignedMessage(body, ts)))
	return "— " + w.key.Name + " " + base64.StdEncoding.EncodeToString(raw) + "\n", nil
}

// GenerateWitnessKey makes a new cosignature key for a witness named name:
// its signer key, written as a note signer key of type 0x04
// ("PRIVATE+KEY+<name>+<key ID>+<base64 of 0x04 ‖ seed>"), and its verifier
// key.
func GenerateWitnessKey(name string) (skey, vkey string, err error) {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := rand.Read(seed); err != nil {
		return "", "", err
	}
	w, err := NewWitness(name, seed)
	if err != nil {
		return "", "", err
	}
	return w.SignerKey(), w.Key().Text, nil
}

// SignerKey is the witness's private key as GenerateWitnessKey writes it.
// It is a secret: keep it in a file only the witness reads.
func (w *Witness) SignerKey() string {
	return fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", w.key.Name, w.key.Hash,
		base64.StdEncoding.EncodeToString(append([]byte{cosignatureAlg}, w.priv.Seed()...)))
}

// ParseWitnessSigner reads a witness's signer key (GenerateWitnessKey). Its
// errors never echo the key.
func ParseWitnessSigner(skey string) (*Witness, error) {
	bad := errors.New("evlog: not a witness signer key (PRIVATE+KEY+<name>+<key ID>+<base64 of 0x04 and a 32-byte seed>)")
	parts := strings.SplitN(strings.TrimSpace(skey), "+", 5)
	if len(parts) != 5 || parts[0] != "PRIVATE" || parts[1] != "KEY" {
		return nil, bad
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != cosignatureAlg {
		return nil, bad
	}
	w, err := NewWitness(parts[2], raw[1:])
	if err != nil {
		return nil, bad
	}
	if fmt.Sprintf("%08x", w.key.Hash) != parts[3] {
		return nil, errors.New("evlog: the witness signer key's ID is not the hash of its name and key")
	}
	return w, nil
}
