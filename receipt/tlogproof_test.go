package receipt_test

import (
	"context"
	"encoding/base64"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	tdlog "github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/keeperhq/keeper/receipt"
)

// TestAVersionThreeReceiptIsATLogProofThatOtherLogClientsRead writes a
// receipt as a C2SP tlog-proof and reads it with code keeper does not own:
// tlog.CheckRecord accepts the index and the proof lines against the
// checkpoint that transparency-dev/formats parses and verifies with the
// log's key. Read back, the proof is the receipt.
func TestAVersionThreeReceiptIsATLogProofThatOtherLogClientsRead(t *testing.T) {
	w := newWorld(t)
	r, err := receipt.Build(context.Background(), w.rows(w.checkpointAnchor(t, "etherlink", 20), w.batchAnchor(t, "solana"), w.checkpointAnchor(t, "tezos", 30)), w.src)
	require.NoError(t, err)
	proof, err := r.TLogProof()
	require.NoError(t, err)
	assert.True(t, receipt.IsTLogProof([]byte(proof)))

	head, cp, ok := strings.Cut(proof, "\n\n")
	require.True(t, ok)
	assert.Equal(t, string(w.notes[30]), cp, "the checkpoint, verbatim, ends the proof")
	lines := strings.Split(head, "\n")
	require.Equal(t, "c2sp.org/tlog-proof@v1", lines[0])
	require.True(t, strings.HasPrefix(lines[1], "extra "))
	require.Equal(t, "index 17", lines[2])

	verifier, err := note.NewVerifier(w.vkey)
	require.NoError(t, err)
	parsed, _, _, err := tdlog.ParseCheckpoint([]byte(cp), origin, verifier)
	require.NoError(t, err)
	assert.Equal(t, uint64(30), parsed.Size)

	var p tlog.RecordProof
	for _, l := range lines[3:] {
		b, err := base64.StdEncoding.DecodeString(l)
		require.NoError(t, err)
		p = append(p, tlog.Hash(b))
	}
	index, err := strconv.ParseInt(strings.TrimPrefix(lines[2], "index "), 10, 64)
	require.NoError(t, err)
	entry, err := r.Entry()
	require.NoError(t, err)
	require.NoError(t, tlog.CheckRecord(p, int64(parsed.Size), tlog.Hash(parsed.Hash), index, tlog.RecordHash(entry[:])))

	back, err := receipt.ParseTLogProof([]byte(proof))
	require.NoError(t, err)
	assert.Equal(t, r, back)
}

func TestParseTLogProofRefusesWhatIsNotKeepersProof(t *testing.T) {
	w := newWorld(t)
	r, err := receipt.Build(context.Background(), w.rows(w.checkpointAnchor(t, "etherlink", 20)), w.src)
	require.NoError(t, err)
	proof, err := r.TLogProof()
	require.NoError(t, err)
	lines := strings.Split(proof, "\n")
	replace := func(i int, with string) string {
		out := append([]string(nil), lines...)
		out[i] = with
		return strings.Join(out, "\n")
	}
	bad := map[string]string{
		"another header":       replace(0, "c2sp.org/tlog-proof@v2"),
		"no extra data":        strings.Join(append(lines[:1:1], lines[2:]...), "\n"),
		"extra not base64":     replace(1, "extra !!"),
		"extra not JSON":       replace(1, "extra "+base64.StdEncoding.EncodeToString([]byte("nope"))),
		"index with a zero":    replace(2, "index 017"),
		"no index":             replace(2, "17"),
		"a short proof hash":   replace(3, base64.StdEncoding.EncodeToString([]byte("short"))),
		"no checkpoint":        strings.SplitAfter(proof, "\n\n")[0][:len(strings.SplitAfter(proof, "\n\n")[0])-1],
		"an unsigned body":     strings.SplitAfter(proof, "\n\n")[0] + "keeper.example.org/log\n30\n",
		"a digest that is odd": strings.Replace(proof, lines[1], "extra "+base64.StdEncoding.EncodeToString([]byte(`{"evidence_id":"ev_1","digest":"00","salt":"`+r.Salt+`","anchors":[]}`)), 1),
	}
	for name, text := range bad {
		_, err := receipt.ParseTLogProof([]byte(text))
		assert.Error(t, err, name)
	}
	v2, err := receipt.Build(context.Background(), receipt.Rows{EvidenceID: "ev_2", Digest: w.digest, Salt: w.salt, Anchors: []receipt.AnchorRow{w.batchAnchor(t, "etherlink")}}, w.src)
	require.NoError(t, err)
	_, err = v2.TLogProof()
	assert.Error(t, err, "a version 2 receipt has no log to prove")
}

// FuzzParseTLogProof reads arbitrary text as a tlog-proof: no panic, and a
// proof that parses writes back to one that parses to the same receipt.
func FuzzParseTLogProof(f *testing.F) {
	w := newWorld(f)
	r, err := receipt.Build(context.Background(), w.rows(w.checkpointAnchor(f, "etherlink", 20), w.batchAnchor(f, "solana")), w.src)
	require.NoError(f, err)
	proof, err := r.TLogProof()
	require.NoError(f, err)
	f.Add([]byte(proof))
	f.Add([]byte("c2sp.org/tlog-proof@v1\nindex 0\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := receipt.ParseTLogProof(data)
		if err != nil {
			return
		}
		again, err := r.TLogProof()
		if err != nil {
			t.Fatalf("a parsed proof does not write back: %v", err)
		}
		back, err := receipt.ParseTLogProof([]byte(again))
		if err != nil {
			t.Fatalf("a written proof does not parse: %v", err)
		}
		assert.Equal(t, r, back)
	})
}
