//go:build !js

package chainread_test

import (
	"crypto/rand"
	mrand "math/rand/v2"
	"testing"

	sol "github.com/gagliardetto/solana-go"
	"github.com/mr-tron/base58"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/chainread"
)

func TestBase58SpellsKeysAndSignaturesAsSolanaGoDoes(t *testing.T) {
	for range 200 {
		k, err := sol.NewRandomPrivateKey()
		require.NoError(t, err)
		pk := k.PublicKey()
		assert.Equal(t, pk.String(), chainread.Base58Encode(pk[:]))
		got, err := chainread.Base58Decode(pk.String())
		require.NoError(t, err)
		assert.Equal(t, pk[:], got)

		sig, err := k.Sign([]byte("message"))
		require.NoError(t, err)
		assert.Equal(t, sig.String(), chainread.Base58Encode(sig[:]))
		parsed, err := chainread.SolanaSignature(sig.String())
		require.NoError(t, err)
		assert.Equal(t, [64]byte(sig), parsed)
	}
}

func TestBase58RoundTripsAnyBytesLeadingZerosIncluded(t *testing.T) {
	for n := range 80 {
		b := make([]byte, n)
		_, _ = rand.Read(b)
		for i := range min(n, mrand.IntN(4)) {
			b[i] = 0
		}
		s := chainread.Base58Encode(b)
		if n > 0 {
			assert.Equal(t, base58.Encode(b), s)
		}
		got, err := chainread.Base58Decode(s)
		if n == 0 {
			assert.Error(t, err, "the empty string spells nothing")
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, b, got)
	}
}

func TestBase58KnownVectors(t *testing.T) {
	for _, v := range []struct {
		in  []byte
		out string
	}{
		{[]byte{0}, "1"},
		{[]byte{0, 0, 1}, "112"},
		{[]byte{57}, "z"},
		{[]byte{58}, "21"},
		{[]byte("Hello World!"), "2NEpo7TZRRrLZSi2U"},
		{[]byte("The quick brown fox jumps over the lazy dog."), "USm3fpXnKG5EUBx2ndxBDMPVciP5hGey2Jh4NDv6gmeo1LkMeiKrLJUUBk6Z"},
		{make([]byte, 32), "11111111111111111111111111111111"},
	} {
		assert.Equal(t, v.out, chainread.Base58Encode(v.in))
		got, err := chainread.Base58Decode(v.out)
		require.NoError(t, err)
		assert.Equal(t, v.in, got)
	}
}

func TestBase58RefusesAnythingOutsideTheAlphabet(t *testing.T) {
	for _, s := range []string{"", " 2NEpo7", "2NEpo7 ", "2NE po7", "\t1", "2NEpo7\n", "0", "O", "I", "l", "+", "/", "=", "é", "2NEpo7\x00"} {
		_, err := chainread.Base58Decode(s)
		assert.Error(t, err, "%q", s)
	}
}

func TestSolanaSignatureReadsReceiptReferences(t *testing.T) {
	k, err := sol.NewRandomPrivateKey()
	require.NoError(t, err)
	sig, err := k.Sign([]byte("m"))
	require.NoError(t, err)
	for _, ref := range []string{sig.String(), "solana:" + sig.String(), "  solana:" + sig.String() + "\n"} {
		got, err := chainread.SolanaSignature(ref)
		require.NoError(t, err, ref)
		assert.Equal(t, [64]byte(sig), got)
	}
	pk := k.PublicKey()
	for _, ref := range []string{"", "solana:", pk.String(), "solana: " + sig.String(), "eip155:1:" + sig.String(), sig.String() + "0"} {
		_, err := chainread.SolanaSignature(ref)
		assert.Error(t, err, ref)
	}
}
