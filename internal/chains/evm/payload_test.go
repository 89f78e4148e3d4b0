package evm_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/chains"
	"github.com/keeperhq/keeper/internal/chains/evm"
	"github.com/keeperhq/keeper/receipt"
)

func TestAPayloadIsThePrefixFollowedByTheRootAndParsesBack(t *testing.T) {
	root := randomRoot(t)
	p := evm.Payload(root)
	assert.Equal(t, "keeper:v1:", string(p[:10]))
	assert.Equal(t, root[:], p[10:])
	assert.Len(t, p, evm.PayloadSize)
	got, err := evm.ParsePayload(p)
	require.NoError(t, err)
	assert.Equal(t, root, got.Root)
	assert.Nil(t, got.Checkpoint)
}

func TestCalldataThatIsNotAnAnchorIsRefused(t *testing.T) {
	root := randomRoot(t)
	for name, data := range map[string][]byte{
		"empty":        nil,
		"other prefix": append([]byte("keeper:v2:"), root[:]...),
		"short root":   evm.Payload(root)[:evm.PayloadSize-1],
		"trailing":     append(evm.Payload(root), 0),
	} {
		_, err := evm.ParsePayload(data)
		assert.ErrorIs(t, err, evm.ErrNotAnchor, name)
	}
}

func TestLoadKeyReadsHexWithOrWithoutPrefixAndWhitespace(t *testing.T) {
	k := mustKey(t)
	hexKey := keyHex(k)
	for _, content := range []string{hexKey, "0x" + hexKey, "  " + hexKey + "\n", "0x" + hexKey + "\r\n"} {
		p := filepath.Join(t.TempDir(), "key")
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		got, err := evm.LoadKey(p)
		require.NoError(t, err)
		assert.Equal(t, crypto.PubkeyToAddress(k.PublicKey), crypto.PubkeyToAddress(got.PublicKey))
	}
}

func TestLoadKeyNamesTheFileButNotItsContent(t *testing.T) {
	dir := t.TempDir()
	_, err := evm.LoadKey(filepath.Join(dir, "missing.key"))
	assert.ErrorContains(t, err, "missing.key")

	p := filepath.Join(dir, "bad.key")
	require.NoError(t, os.WriteFile(p, []byte("0123456789abcdef-not-a-key"), 0o600))
	_, err = evm.LoadKey(p)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad.key")
	assert.NotContains(t, err.Error(), "0123456789abcdef")

	zero := filepath.Join(dir, "zero.key")
	require.NoError(t, os.WriteFile(zero, []byte("0000000000000000000000000000000000000000000000000000000000000000"), 0o600))
	_, err = evm.LoadKey(zero)
	assert.ErrorContains(t, err, "not hold a valid")
}

func TestACheckpointPayloadCarriesKeyHashSizeAndRootAndParsesBack(t *testing.T) {
	ref := receipt.CheckpointRef{KeyHash: 0xdeadbeef, Size: 1<<40 + 7, Root: randomRoot(t)}
	p := chains.Anchor{BatchID: 9, Root: ref.Root, Checkpoint: &ref}.Calldata()
	assert.Len(t, p, receipt.EVMCheckpointCalldataSize)
	assert.Equal(t, "keeper:v3:", string(p[:10]))
	assert.Equal(t, []byte{0xde, 0xad, 0xbe, 0xef}, p[10:14])
	got, err := evm.ParsePayload(p)
	require.NoError(t, err)
	require.NotNil(t, got.Checkpoint)
	assert.Equal(t, ref, *got.Checkpoint)
	assert.Equal(t, ref.Root, got.Root)
	for name, data := range map[string][]byte{"short": p[:len(p)-1], "trailing": append(append([]byte{}, p...), 0)} {
		_, err := evm.ParsePayload(data)
		assert.ErrorIs(t, err, evm.ErrNotAnchor, name)
	}
}
