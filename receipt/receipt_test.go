package receipt

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/merkle"
)

// build makes a receipt for leaf 4 of a 6-leaf tree: version 2 (salted
// leaves, a network per anchor) or version 1 (bare digests).
func build(t testing.TB, version int) Receipt {
	var leaves [][]byte
	var digests [][32]byte
	for i := 0; i < 6; i++ {
		d := sha256.Sum256([]byte(fmt.Sprint(i)))
		digests = append(digests, d)
		if version == VersionUnsalted {
			leaves = append(leaves, d[:])
		} else {
			leaves = append(leaves, Leaf(bytes.Repeat([]byte{byte(i + 1)}, SaltSize), d))
		}
	}
	tree, err := merkle.Build(leaves)
	require.NoError(t, err)
	p, err := tree.Path(4)
	require.NoError(t, err)
	path := make([][32]byte, len(p))
	for i, h := range p {
		path[i] = h
	}
	root := tree.Root()
	r := Receipt{Version: version, EvidenceID: "ev_1", Digest: hex.EncodeToString(digests[4][:]), Tree: TreeRFC6962,
		Anchors: []Anchor{{Chain: "etherlink", LeafIndex: 4, TreeSize: 6, Path: HexPath(path), Root: hex.EncodeToString(root[:]), TxRef: "0x1"}}}
	if version == VersionSalted {
		r.Salt = hex.EncodeToString(bytes.Repeat([]byte{5}, SaltSize))
		r.Anchors[0].Network, r.Anchors[0].BlockHash, r.Anchors[0].Finality = "eip155:42793", "0xb1", "finalized"
	}
	return r
}

func sample(t testing.TB) []byte {
	b, err := json.Marshal(build(t, VersionSalted))
	require.NoError(t, err)
	return b
}

func TestAGenuineReceiptOfEitherVersionParsesAndItsProofHolds(t *testing.T) {
	for _, v := range []int{VersionUnsalted, VersionSalted} {
		b, err := json.Marshal(build(t, v))
		require.NoError(t, err)
		r, err := Parse(b)
		require.NoError(t, err, "version %d", v)
		assert.NoError(t, r.CheckProof(r.Anchors[0]), "version %d", v)
	}
}

func TestTheSaltIsPartOfTheLeaf(t *testing.T) {
	r := build(t, VersionSalted)
	r.Salt = hex.EncodeToString(bytes.Repeat([]byte{6}, SaltSize))
	assert.Error(t, r.CheckProof(r.Anchors[0]), "another salt is another leaf")

	r = build(t, VersionSalted)
	r.Version = VersionUnsalted
	assert.Error(t, r.CheckProof(r.Anchors[0]), "a salted leaf read as a bare digest")
}

func TestAVersionTwoPathRevealsNoOtherDigestsLeafHash(t *testing.T) {
	r := build(t, VersionSalted)
	for i := 0; i < 6; i++ {
		d := sha256.Sum256([]byte(fmt.Sprint(i)))
		bare := merkle.LeafHash(d[:])
		assert.NotContains(t, r.Anchors[0].Path, hex.EncodeToString(bare[:]), "digest %d", i)
	}
	// In version 1 the sibling of leaf 4 is leaf 5's bare hash: anyone who
	// guesses digest 5 can test it.
	v1 := build(t, VersionUnsalted)
	d5 := sha256.Sum256([]byte("5"))
	bare := merkle.LeafHash(d5[:])
	assert.Contains(t, v1.Anchors[0].Path, hex.EncodeToString(bare[:]))
}

func TestParseRefusesWhatIsNotAReceipt(t *testing.T) {
	noNetwork := build(t, VersionSalted)
	noNetwork.Anchors[0].Network = ""
	shortSalt := build(t, VersionSalted)
	shortSalt.Salt = "0102"
	saltedV1 := build(t, VersionUnsalted)
	saltedV1.Salt = hex.EncodeToString(make([]byte, SaltSize))
	bad := []string{``, `[]`, `{"version":3,"tree":"rfc6962-sha256"}`, `{"version":1,"tree":"sha1"}`,
		`{"version":1,"tree":"rfc6962-sha256","digest":"00"}`,
		`{"version":1,"tree":"rfc6962-sha256","digest":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","anchors":[]}`}
	for _, r := range []Receipt{noNetwork, shortSalt, saltedV1} {
		b, err := json.Marshal(r)
		require.NoError(t, err)
		bad = append(bad, string(b))
	}
	for _, b := range bad {
		_, err := Parse([]byte(b))
		assert.Error(t, err, b)
	}
}

func TestPayloadsRoundTripAndRefuseAnythingElse(t *testing.T) {
	root := sha256.Sum256([]byte("root"))
	got, err := ParseEVMCalldata(EVMCalldata(root))
	require.NoError(t, err)
	assert.Equal(t, root, got)
	got, err = ParseSolanaMemo(SolanaMemo(root))
	require.NoError(t, err)
	assert.Equal(t, root, got)

	_, err = ParseEVMCalldata(append(EVMCalldata(root), 0))
	assert.ErrorIs(t, err, ErrNotAnchor)
	_, err = ParseSolanaMemo(PayloadPrefix + hex.EncodeToString(root[:])[:63] + "A")
	assert.ErrorIs(t, err, ErrNotAnchor)

	assert.Equal(t, "eip155:42793", EVMNetwork(42793))
	assert.Equal(t, "solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp", SolanaNetwork("5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d"))
}

// FuzzReceipt parses arbitrary documents and checks their proofs: no panic,
// and a proof that holds must really recompute the root.
func FuzzReceipt(f *testing.F) {
	f.Add(sample(f))
	v1, err := json.Marshal(build(f, VersionUnsalted))
	require.NoError(f, err)
	f.Add(v1)
	f.Add([]byte(`{"version":1,"tree":"rfc6962-sha256","digest":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","anchors":[{"leaf_index":-1,"tree_size":0,"path":["zz"]}]}`))
	f.Add([]byte(`{"version":1,"tree":"rfc6962-sha256","digest":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","anchors":[{"leaf_index":9223372036854775807,"tree_size":9223372036854775807,"path":[]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := Parse(data)
		if err != nil {
			return
		}
		for _, a := range r.Anchors {
			if r.CheckProof(a) != nil {
				continue
			}
			leaf, err := r.Leaf()
			if err != nil {
				t.Fatalf("CheckProof accepted a receipt whose leaf is unreadable: %s", data)
			}
			root, _ := hex.DecodeString(a.Root)
			path := make([]merkle.Hash, len(a.Path))
			for i, p := range a.Path {
				b, _ := hex.DecodeString(p)
				copy(path[i][:], b)
			}
			got, err := merkle.RootFromPath(leaf, a.LeafIndex, a.TreeSize, path)
			if err != nil || !bytes.Equal(got[:], root) {
				t.Fatalf("CheckProof accepted a proof that does not recompute the root: %s", data)
			}
		}
	})
}
