// Package evlog holds the formats of keeper's evidence log, a C2SP
// transparency log (docs/log.md): its checkpoints (c2sp.org/tlog-checkpoint,
// signed notes with an Ed25519 key, c2sp.org/signed-note), the paths and
// bundles of its tiles (c2sp.org/tlog-tiles) and its entries, each the salted
// commitment SHA-256(salt ‖ digest) of one evidence. It depends on nothing of
// keeper's server: verifiers and monitors import it.
package evlog

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// Checkpoint is the body of a signed checkpoint: the log's origin, its size
// and the RFC 6962 root of its first Size entries.
type Checkpoint struct {
	Origin string
	Size   uint64
	Root   [32]byte
}

// Body is the checkpoint's text as signed: origin, size and base64 root,
// each on its own line.
func (c Checkpoint) Body() string {
	return fmt.Sprintf("%s\n%d\n%s\n", c.Origin, c.Size, base64.StdEncoding.EncodeToString(c.Root[:]))
}

// ParseBody reads a checkpoint body (extension lines after the root are
// allowed and ignored, as the spec requires of clients that do not know them).
func ParseBody(text string) (Checkpoint, error) {
	lines := strings.SplitAfter(text, "\n")
	if len(lines) < 3 || !strings.HasSuffix(lines[2], "\n") {
		return Checkpoint{}, errors.New("evlog: a checkpoint needs an origin, a size and a root line")
	}
	var c Checkpoint
	c.Origin = strings.TrimSuffix(lines[0], "\n")
	if c.Origin == "" {
		return Checkpoint{}, errors.New("evlog: checkpoint origin is empty")
	}
	sizeText := strings.TrimSuffix(lines[1], "\n")
	size, err := strconv.ParseUint(sizeText, 10, 64)
	if err != nil || (len(sizeText) > 1 && sizeText[0] == '0') {
		return Checkpoint{}, fmt.Errorf("evlog: checkpoint size %q is not a decimal number", sizeText)
	}
	c.Size = size
	root, err := base64.StdEncoding.DecodeString(strings.TrimSuffix(lines[2], "\n"))
	if err != nil || len(root) != 32 {
		return Checkpoint{}, errors.New("evlog: checkpoint root is not 32 bytes of base64")
	}
	copy(c.Root[:], root)
	return c, nil
}

// Key is a log's public key as a note verifier key ("vkey"):
// "<origin>+<key hash, 8 hex digits>+<base64 of 0x01 ‖ Ed25519 public key>".
// Its name is the log's origin.
type Key struct {
	Text     string
	Name     string
	Hash     uint32
	verifier note.Verifier
}

// ParseKey reads a verifier key.
func ParseKey(vkey string) (Key, error) {
	vkey = strings.TrimSpace(vkey)
	v, err := note.NewVerifier(vkey)
	if err != nil {
		return Key{}, fmt.Errorf("evlog: log key %q: %w", shorten(vkey), err)
	}
	return Key{Text: vkey, Name: v.Name(), Hash: v.KeyHash(), verifier: v}, nil
}

// Open checks a signed checkpoint against the key: a signature by it, and
// an origin equal to the key's name. It returns the checkpoint body.
func (k Key) Open(signed []byte) (Checkpoint, error) {
	n, err := note.Open(signed, note.VerifierList(k.verifier))
	if err != nil {
		return Checkpoint{}, fmt.Errorf("evlog: checkpoint signature: %w", err)
	}
	c, err := ParseBody(n.Text)
	if err != nil {
		return Checkpoint{}, err
	}
	if c.Origin != k.Name {
		return Checkpoint{}, fmt.Errorf("evlog: checkpoint origin %q is not the key's %q", c.Origin, k.Name)
	}
	return c, nil
}

// Signer signs checkpoints with a log's private key.
type Signer struct {
	origin string
	signer note.Signer
	key    Key
}

// NewSigner reads a note signer key ("PRIVATE+KEY+<origin>+<hash>+<base64>")
// for the log whose origin is given: the key's name must be that origin.
func NewSigner(skey, origin string) (*Signer, error) {
	s, err := note.NewSigner(strings.TrimSpace(skey))
	if err != nil {
		return nil, errors.New("evlog: the log's signing key is not a note signer key") // never echo a private key
	}
	if s.Name() != origin {
		return nil, fmt.Errorf("evlog: the log's signing key is for origin %q, not %q", s.Name(), origin)
	}
	vkey, err := verifierKeyOf(strings.TrimSpace(skey))
	if err != nil {
		return nil, err
	}
	k, err := ParseKey(vkey)
	if err != nil {
		return nil, err
	}
	return &Signer{origin: origin, signer: s, key: k}, nil
}

// GenerateKey makes a new signing key for a log and returns it with its
// verifier key.
func GenerateKey(origin string) (skey, vkey string, err error) {
	if err := CheckOrigin(origin); err != nil {
		return "", "", err
	}
	return note.GenerateKey(nil, origin)
}

// Key is the signer's public key.
func (s *Signer) Key() Key { return s.key }

// Origin is the log's origin.
func (s *Signer) Origin() string { return s.origin }

// Sign signs a checkpoint of the signer's log.
func (s *Signer) Sign(c Checkpoint) ([]byte, error) {
	if c.Origin != s.origin {
		return nil, fmt.Errorf("evlog: checkpoint of %q signed with the key of %q", c.Origin, s.origin)
	}
	return note.Sign(&note.Note{Text: c.Body()}, s.signer)
}

// verifierKeyOf derives the verifier key of a signer key.
func verifierKeyOf(skey string) (string, error) {
	parts := strings.SplitN(skey, "+", 5)
	if len(parts) != 5 {
		return "", errors.New("evlog: the log's signing key is not a note signer key")
	}
	raw, err := base64.StdEncoding.DecodeString(parts[4])
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return "", errors.New("evlog: the log's signing key is not an Ed25519 note key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	return note.NewEd25519VerifierKey(parts[2], pub)
}

// CheckOrigin refuses an origin a checkpoint cannot carry: empty, with
// whitespace or a "+" (the note key name's separator), or with a scheme.
func CheckOrigin(origin string) error {
	switch {
	case origin == "":
		return errors.New("evlog: the log origin is empty")
	case strings.Contains(origin, "://"):
		return fmt.Errorf("evlog: the log origin %q has a scheme; write it without (keeper.example.org/log)", origin)
	case strings.ContainsAny(origin, "+ \t\r\n"):
		return fmt.Errorf("evlog: the log origin %q may not hold spaces or +", origin)
	}
	return nil
}

// EntryOf is the log entry of an evidence: SHA-256(salt ‖ digest). It
// reveals nothing of the digest without the salt, which only the receipt
// holds.
func EntryOf(salt []byte, digest [32]byte) [32]byte {
	h := sha256.New()
	h.Write(salt)
	h.Write(digest[:])
	var out [32]byte
	h.Sum(out[:0])
	return out
}

func shorten(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// SignText signs any text as a note by the log's key: the log's trust file
// (package evlog/trust) is served this way, so a verifier holding the key
// can check it. text must end in a newline and hold no blank line.
func (s *Signer) SignText(text string) ([]byte, error) {
	return note.Sign(&note.Note{Text: text}, s.signer)
}

// OpenText checks a note signed by the key (SignText) and returns its text.
func (k Key) OpenText(signed []byte) (string, error) {
	n, err := note.Open(signed, note.VerifierList(k.verifier))
	if err != nil {
		return "", fmt.Errorf("evlog: note signature: %w", err)
	}
	return n.Text, nil
}
