package receipt

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/merkle"
)

func sample(t testing.TB) []byte {
	var leaves [][]byte
	for i := 0; i < 6; i++ {
		d := sha256.Sum256([]byte(fmt.Sprint(i)))
		leaves = append(leaves, d[:])
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
	b, err := json.Marshal(Receipt{Version: Version, EvidenceID: "ev_1", Digest: hex.EncodeToString(leaves[4]), Tree: TreeRFC6962,
		Anchors: []Anchor{{Chain: "etherlink", LeafIndex: 4, TreeSize: 6, Path: HexPath(path), Root: hex.EncodeToString(root[:]), TxRef: "0x1"}}})
	require.NoError(t, err)
	return b
}

func TestAGenuineReceiptParsesAndItsProofHolds(t *testing.T) {
	r, err := Parse(sample(t))
	require.NoError(t, err)
	assert.NoError(t, r.CheckProof(r.Anchors[0]))
}

func TestParseRefusesWhatIsNotAReceipt(t *testing.T) {
	for _, bad := range []string{``, `[]`, `{"version":2,"tree":"rfc6962-sha256"}`, `{"version":1,"tree":"sha1"}`,
		`{"version":1,"tree":"rfc6962-sha256","digest":"00"}`,
		`{"version":1,"tree":"rfc6962-sha256","digest":"9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08","anchors":[]}`} {
		_, err := Parse([]byte(bad))
		assert.Error(t, err, bad)
	}
}

// FuzzReceipt parses arbitrary documents and checks their proofs: no panic,
// and a proof that holds must really recompute the root.
func FuzzReceipt(f *testing.F) {
	f.Add(sample(f))
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
			d, _ := hex.DecodeString(r.Digest)
			root, _ := hex.DecodeString(a.Root)
			path := make([]merkle.Hash, len(a.Path))
			for i, p := range a.Path {
				b, _ := hex.DecodeString(p)
				copy(path[i][:], b)
			}
			got, err := merkle.RootFromPath(d, a.LeafIndex, a.TreeSize, path)
			if err != nil || hex.EncodeToString(got[:]) != hex.EncodeToString(root) {
				t.Fatalf("CheckProof accepted a proof that does not recompute the root: %s", data)
			}
		}
	})
}
