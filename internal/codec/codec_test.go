package codec_test

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	commonpb "go.temporal.io/api/common/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"

	"github.com/keeperhq/keeper/internal/codec"
)

func newKey(t *testing.T, id string) codec.Key {
	t.Helper()
	k := codec.Key{ID: id}
	_, err := rand.Read(k.Secret[:])
	require.NoError(t, err)
	return k
}

func newCodec(t *testing.T, keys ...codec.Key) *codec.Codec {
	t.Helper()
	c, err := codec.New(keys...)
	require.NoError(t, err)
	return c
}

type walletInput struct {
	Wallet   string
	Metadata map[string]string
}

var secretInput = walletInput{Wallet: "0x52908400098527886e0f7030069857d2e4169ee7", Metadata: map[string]string{"customer": "acme-confidential"}}

func TestAValueRoundTripsThroughTheCodecDataConverter(t *testing.T) {
	dc := converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), newCodec(t, newKey(t, "k1")))
	p, err := dc.ToPayload(secretInput)
	require.NoError(t, err)

	var back walletInput
	require.NoError(t, dc.FromPayload(p, &back))
	assert.Equal(t, secretInput, back)
}

func TestAnEncodedPayloadShowsOnlyItsEncodingAndKeyID(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	plain, err := converter.GetDefaultDataConverter().ToPayload(secretInput)
	require.NoError(t, err)

	enc, err := c.Encode([]*commonpb.Payload{plain})
	require.NoError(t, err)
	require.Len(t, enc, 1)
	assert.Equal(t, map[string][]byte{"encoding": []byte("binary/encrypted"), "encryption-key-id": []byte("k1")}, enc[0].Metadata)
	for _, s := range []string{secretInput.Wallet, "acme-confidential", "Wallet", "json/plain"} {
		assert.False(t, bytes.Contains(enc[0].Data, []byte(s)), "ciphertext holds %q", s)
	}

	dec, err := c.Decode(enc)
	require.NoError(t, err)
	assert.Equal(t, plain.Data, dec[0].Data)
	assert.Equal(t, plain.Metadata, dec[0].Metadata)
}

func TestTheSamePayloadEncryptsDifferentlyEachTime(t *testing.T) {
	c := newCodec(t, newKey(t, "k1"))
	p := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`"same"`)}
	a, err := c.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	b, err := c.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	assert.NotEqual(t, a[0].Data, b[0].Data, "a fresh nonce per payload")
}

func TestAPayloadEncryptedWithAnOldKeyStillDecodesAfterANewKeyIsPutFirst(t *testing.T) {
	old, next := newKey(t, "2025-01"), newKey(t, "2026-06")
	before := newCodec(t, old)
	p := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`{"BatchID":7}`)}
	encOld, err := before.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)

	after := newCodec(t, next, old)
	assert.Equal(t, "2026-06", after.EncryptKeyID())
	encNew, err := after.Encode([]*commonpb.Payload{p})
	require.NoError(t, err)
	assert.Equal(t, "2026-06", string(encNew[0].Metadata["encryption-key-id"]), "new payloads use the first key")

	dec, err := after.Decode(append(encOld, encNew...))
	require.NoError(t, err)
	assert.Equal(t, p.Data, dec[0].Data)
	assert.Equal(t, p.Data, dec[1].Data)
}

func TestAPayloadWhoseKeyIsNotInTheRingIsAClearError(t *testing.T) {
	enc, err := newCodec(t, newKey(t, "retired")).Encode([]*commonpb.Payload{{Data: []byte("x")}})
	require.NoError(t, err)

	_, err = newCodec(t, newKey(t, "current")).Decode(enc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `key "retired"`)
	assert.Contains(t, err.Error(), "not in the key file")
}

func TestTamperedCiphertextFailsToDecode(t *testing.T) {
	k1, k2 := newKey(t, "k1"), newKey(t, "k2")
	c := newCodec(t, k1, k2)
	encode := func() *commonpb.Payload {
		enc, err := c.Encode([]*commonpb.Payload{{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`{"Root":"ab"}`)}})
		require.NoError(t, err)
		return enc[0]
	}
	for name, tamper := range map[string]func(p *commonpb.Payload){
		"a flipped bit in the ciphertext": func(p *commonpb.Payload) { p.Data[len(p.Data)/2] ^= 1 },
		"a flipped bit in the nonce":      func(p *commonpb.Payload) { p.Data[0] ^= 0x80 },
		"a flipped bit in the tag":        func(p *commonpb.Payload) { p.Data[len(p.Data)-1] ^= 1 },
		"the key id relabelled":           func(p *commonpb.Payload) { p.Metadata["encryption-key-id"] = []byte("k2") },
		"a truncated payload":             func(p *commonpb.Payload) { p.Data = p.Data[:10] },
	} {
		t.Run(name, func(t *testing.T) {
			p := encode()
			tamper(p)
			_, err := c.Decode([]*commonpb.Payload{p})
			require.Error(t, err)
		})
	}
}

func TestPlainPayloadsPassThroughDecodeUnchanged(t *testing.T) {
	plain := &commonpb.Payload{Metadata: map[string][]byte{"encoding": []byte("json/plain")}, Data: []byte(`{"BatchID":1}`)}
	dec, err := newCodec(t, newKey(t, "k1")).Decode([]*commonpb.Payload{plain})
	require.NoError(t, err)
	assert.Same(t, plain, dec[0], "histories written before encryption was turned on stay readable")
}

func TestDuplicateOrEmptyKeyIDsAreRefused(t *testing.T) {
	_, err := codec.New(newKey(t, "a"), newKey(t, "a"))
	assert.ErrorContains(t, err, "twice")
	_, err = codec.New(newKey(t, ""))
	assert.ErrorContains(t, err, "empty id")
	_, err = codec.New()
	assert.Error(t, err)
}

func TestAKeyPrintsWithoutItsSecret(t *testing.T) {
	k := newKey(t, "k1")
	k.Secret = [codec.KeySize]byte{0xde, 0xad, 0xbe, 0xef}
	for _, s := range []string{k.String(), k.GoString()} {
		assert.Equal(t, "codec key k1", s)
	}
}

func TestClientOptionsEncryptFailureMessagesToo(t *testing.T) {
	co := newCodec(t, newKey(t, "k1")).ClientOptions(client.Options{HostPort: "127.0.0.1:7233"})
	assert.Equal(t, "127.0.0.1:7233", co.HostPort, "other options are kept")

	f := co.FailureConverter.ErrorToFailure(errors.New("scan wallet 0x52908400098527886e0f7030069857d2e4169ee7: node refused"))
	assert.NotContains(t, f.GetMessage(), "0x5290")
	assert.NotContains(t, f.GetEncodedAttributes().String(), "0x5290")
	assert.Equal(t, "binary/encrypted", string(f.GetEncodedAttributes().GetMetadata()["encoding"]))

	back := co.FailureConverter.FailureToError(f)
	assert.Contains(t, back.Error(), "scan wallet 0x52908400098527886e0f7030069857d2e4169ee7: node refused")
}
