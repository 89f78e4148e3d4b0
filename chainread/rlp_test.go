//go:build !js

package chainread

import (
	"bytes"
	"encoding/hex"
	"math"
	"math/big"
	"testing"

	"github.com/ethereum/go-ethereum/rlp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRLPEncodesTheSpecsExamples(t *testing.T) {
	// The examples of the RLP page of ethereum.org's developer docs.
	for name, c := range map[string]struct {
		got  []byte
		want string
	}{
		"dog":                 {rlpString([]byte("dog")), "83646f67"},
		"[cat, dog]":          {rlpList(rlpString([]byte("cat")), rlpString([]byte("dog"))), "c88363617483646f67"},
		"empty string":        {rlpString(nil), "80"},
		"empty list":          {rlpList(), "c0"},
		"integer 0":           {rlpUint(0), "80"},
		"byte 0x00":           {rlpString([]byte{0}), "00"},
		"byte 0x0f":           {rlpString([]byte{0x0f}), "0f"},
		"bytes 0x0400":        {rlpString([]byte{4, 0}), "820400"},
		"integer 1024":        {rlpUint(1024), "820400"},
		"integer 0x0400 int":  {rlpInt([]byte{0, 0, 4, 0}), "820400"},
		"set of three":        {rlpList(rlpList(), rlpList(rlpList()), rlpList(rlpList(), rlpList(rlpList()))), "c7c0c1c0c3c0c1c0"},
		"lorem ipsum (56 B)":  {rlpString([]byte("Lorem ipsum dolor sit amet, consectetur adipisicing elit")), "b838" + hex.EncodeToString([]byte("Lorem ipsum dolor sit amet, consectetur adipisicing elit"))},
		"integer 127, 1 byte": {rlpUint(127), "7f"},
		"integer 128":         {rlpUint(128), "8180"},
	} {
		assert.Equal(t, c.want, hex.EncodeToString(c.got), name)
	}
}

func TestRLPEncodesAsGoEthereumDoes(t *testing.T) {
	for _, n := range []int{0, 1, 55, 56, 255, 256, 1024, 70000} {
		b := bytes.Repeat([]byte{0xab}, n)
		want, err := rlp.EncodeToBytes(b)
		require.NoError(t, err)
		assert.Equal(t, want, rlpString(b), "string of %d bytes", n)

		// A list whose payload is n encoded one-byte items.
		items := make([][]byte, n)
		list := make([]uint, n)
		for i := range items {
			items[i] = rlpUint(5)
			list[i] = 5
		}
		want, err = rlp.EncodeToBytes(list)
		require.NoError(t, err)
		assert.Equal(t, want, rlpList(items...), "list of %d items", n)
	}
	for _, x := range []uint64{0, 1, 127, 128, 255, 256, 1 << 32, math.MaxUint64} {
		want, err := rlp.EncodeToBytes(x)
		require.NoError(t, err)
		assert.Equal(t, want, rlpUint(x), "uint %d", x)
		want, err = rlp.EncodeToBytes(new(big.Int).SetUint64(x))
		require.NoError(t, err)
		assert.Equal(t, want, rlpInt(append([]byte{0, 0}, rlpBigEndian(x)...)), "big-endian %d with leading zeros", x)
	}
}
