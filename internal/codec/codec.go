// Package codec encrypts every Temporal payload keeper writes with
// AES-256-GCM, so evidence metadata, wallet data and workflow results are
// ciphertext in Temporal's database and in its Web UI. Keys carry ids: the
// first key of the ring encrypts, any key of the ring decrypts the payloads it
// encrypted, so a key is rotated by putting a new one first and keeping the
// old ones until no open history needs them.
//
// Every Temporal client keeper builds gets the codec through ClientOptions;
// the HTTP API serves it to the Web UI and the temporal CLI (Handler).
package codec

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"

	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/converter"
	"google.golang.org/protobuf/proto"
)

const (
	// EncodingEncrypted is the metadata encoding of an encrypted payload.
	EncodingEncrypted = "binary/encrypted"
	// MetadataKeyID names the key that encrypted a payload.
	MetadataKeyID = "encryption-key-id"
	// KeySize is the length of an AES-256 key in bytes.
	KeySize = 32
)

// Key is one AES-256 key and its id. The id is stored in plain text in every
// payload the key encrypts; the key itself never leaves the process.
type Key struct {
	ID     string
	Secret [KeySize]byte
}

// String keeps the secret out of anything that prints a Key.
func (k Key) String() string { return "codec key " + k.ID }

// GoString keeps the secret out of %#v.
func (k Key) GoString() string { return k.String() }

// Codec is a converter.PayloadCodec over a key ring.
type Codec struct {
	encryptID string
	aeads     map[string]cipher.AEAD
}

var _ converter.PayloadCodec = (*Codec)(nil)

// New returns a codec that encrypts with keys[0] and decrypts with any of
// keys. Ids must be distinct and non-empty.
func New(keys ...Key) (*Codec, error) {
	if len(keys) == 0 {
		return nil, errors.New("codec: no keys")
	}
	c := &Codec{encryptID: keys[0].ID, aeads: make(map[string]cipher.AEAD, len(keys))}
	for _, k := range keys {
		if k.ID == "" {
			return nil, errors.New("codec: a key has an empty id")
		}
		if _, dup := c.aeads[k.ID]; dup {
			return nil, fmt.Errorf("codec: key id %q appears twice", k.ID)
		}
		block, err := aes.NewCipher(k.Secret[:])
		if err != nil {
			return nil, fmt.Errorf("codec: key %q: cannot make a cipher", k.ID)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("codec: key %q: cannot make a GCM cipher", k.ID)
		}
		c.aeads[k.ID] = aead
	}
	return c, nil
}

// EncryptKeyID is the id of the key new payloads are encrypted with.
func (c *Codec) EncryptKeyID() string { return c.encryptID }

// Encode encrypts each payload, whole (metadata and data), with the first
// key. The key id is authenticated with it, so a payload relabelled with
// another id fails to decode.
func (c *Codec) Encode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	aead := c.aeads[c.encryptID]
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		plain, err := proto.Marshal(p)
		if err != nil {
			return payloads, fmt.Errorf("codec: encode payload %d: %w", i, err)
		}
		nonce := make([]byte, aead.NonceSize(), aead.NonceSize()+len(plain)+aead.Overhead())
		if _, err := rand.Read(nonce); err != nil {
			return payloads, fmt.Errorf("codec: encode payload %d: no randomness for a nonce: %w", i, err)
		}
		out[i] = &commonpb.Payload{
			Metadata: map[string][]byte{
				converter.MetadataEncoding: []byte(EncodingEncrypted),
				MetadataKeyID:              []byte(c.encryptID),
			},
			Data: aead.Seal(nonce, nonce, plain, []byte(c.encryptID)),
		}
	}
	return out, nil
}

// Decode decrypts encrypted payloads with the key their metadata names and
// passes any other payload through unchanged (histories written before
// encryption was turned on stay readable). A payload whose key is not in the
// ring, or whose ciphertext or key id was altered, is an error.
func (c *Codec) Decode(payloads []*commonpb.Payload) ([]*commonpb.Payload, error) {
	out := make([]*commonpb.Payload, len(payloads))
	for i, p := range payloads {
		if string(p.GetMetadata()[converter.MetadataEncoding]) != EncodingEncrypted {
			out[i] = p
			continue
		}
		id := string(p.GetMetadata()[MetadataKeyID])
		aead, ok := c.aeads[id]
		if !ok {
			return payloads, fmt.Errorf("codec: payload %d was encrypted with key %q, which is not in the key file", i, printable(id))
		}
		data := p.GetData()
		if len(data) < aead.NonceSize()+aead.Overhead() {
			return payloads, fmt.Errorf("codec: payload %d (key %q) is too short to be ciphertext", i, id)
		}
		plain, err := aead.Open(nil, data[:aead.NonceSize()], data[aead.NonceSize():], []byte(id))
		if err != nil {
			return payloads, fmt.Errorf("codec: payload %d (key %q) fails authentication: altered, or encrypted with another key of that id", i, id)
		}
		var dec commonpb.Payload
		if err := proto.Unmarshal(plain, &dec); err != nil {
			return payloads, fmt.Errorf("codec: payload %d (key %q) decrypts to no payload: %w", i, id, err)
		}
		out[i] = &dec
	}
	return out, nil
}

// printable cuts an id read from a payload, which anyone with access to
// Temporal could have written, to a length fit for an error message.
func printable(s string) string {
	const limit = 64
	if len(s) > limit {
		return s[:limit] + "…"
	}
	return s
}
