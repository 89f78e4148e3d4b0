package witness_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/evlog"
	"github.com/keeperhq/keeper/internal/tlogwitness"
	"github.com/keeperhq/keeper/internal/witness"
)

func TestAWitnessCosignsAGrowingLogAndEachCosignatureVerifies(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	w := serve(t, log)
	old := int64(0)
	for _, n := range []int64{0, 1, 5, 17, 100, 100, 1000} {
		w.clock.add(time.Minute)
		checkpoint := log.checkpoint(t, n)
		r := w.post(t, tlogwitness.AddCheckpoint{OldSize: uint64(old), Proof: log.proof(t, old, n), Checkpoint: checkpoint}.Marshal())
		require.Equal(t, http.StatusOK, r.status, "size %d from %d: %s", n, old, r.body)
		assert.Equal(t, "text/plain; charset=utf-8", r.contentType)
		lines, err := tlogwitness.ParseCosignatures(r.body)
		require.NoError(t, err)
		require.Len(t, lines, 1)

		c, cosigs, err := evlog.OpenCosigned(cosigned(checkpoint, r), log.signer.Key(), []evlog.WitnessKey{w.Key()})
		require.NoError(t, err, "size %d", n)
		assert.Equal(t, uint64(n), c.Size)
		assert.Equal(t, []evlog.Cosignature{{Witness: "witness.example/w1", Time: w.clock.Now().UTC()}}, cosigs, "size %d: cosigned at the witness's time", n)
		old = n
	}
}

func TestA409NamesTheSizeCosignedLastAndCarriesItsContentType(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	w := serve(t, log)
	require.Equal(t, http.StatusOK, w.post(t, log.request(t, 0, 10)).status)

	for _, old := range []int64{0, 5, 11} {
		r := w.post(t, log.request(t, old, 20))
		assert.Equal(t, http.StatusConflict, r.status, "old %d", old)
		assert.Equal(t, tlogwitness.SizeContentType, r.contentType)
		assert.Equal(t, "10\n", string(r.body))
	}
	assert.Equal(t, http.StatusOK, w.post(t, log.request(t, 10, 20)).status, "the log resubmits from the size it was told")
	assert.Empty(t, refused(t, w), "a 409 is the protocol's ordinary course: nothing kept")
}

func TestAnUnknownOriginIs404AndAnotherKeyIs403AndNeitherIsKept(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	w := serve(t, log)

	r := w.post(t, newMemLog(t, "example.com/other").request(t, 0, 3))
	assert.Equal(t, http.StatusNotFound, r.status)
	assert.Equal(t, "text/plain; charset=utf-8", r.contentType)
	assert.Contains(t, string(r.body), `no log "example.com/other" is witnessed here`)

	impostor := newMemLog(t, "example.com/log") // the same origin, another key
	r = w.post(t, impostor.request(t, 0, 3))
	assert.Equal(t, http.StatusForbidden, r.status)
	assert.True(t, strings.HasSuffix(string(r.body), "\n") && strings.Count(string(r.body), "\n") == 1, "one line: %q", r.body)

	assert.Empty(t, refused(t, w), "what the log's key did not sign is no evidence against it")
}

// A fork (another root at a size cosigned, or a longer tree that does not
// extend it), a rollback and a proof that does not verify, each signed by
// the log's key: refused, and kept with the bytes received.
func TestAForkARollbackAndABadProofAreRefusedAndKeptAsEvidence(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	w := serve(t, log)
	require.Equal(t, http.StatusOK, w.post(t, log.request(t, 0, 20)).status)

	fork := log.forkAt(t, 19, "fork ")
	require.NotEqual(t, log.root(t, 20), fork.root(t, 20))
	badProof := tlogwitness.AddCheckpoint{OldSize: 20, Proof: log.proof(t, 20, 40), Checkpoint: log.checkpoint(t, 40)}
	badProof.Proof[0][0] ^= 1
	cases := []struct {
		name   string
		body   []byte
		status int
	}{
		{"another root at the size cosigned", fork.request(t, 20, 20), http.StatusUnprocessableEntity},
		{"a longer tree that does not extend the one cosigned", fork.request(t, 20, 30), http.StatusUnprocessableEntity},
		{"a rollback: an old size beyond the checkpoint's", log.request(t, 20, 10), http.StatusBadRequest},
		{"a proof that does not verify", badProof.Marshal(), http.StatusUnprocessableEntity},
	}
	for _, c := range cases {
		w.clock.add(time.Second)
		r := w.post(t, c.body)
		assert.Equal(t, c.status, r.status, c.name)
		assert.Equal(t, "text/plain; charset=utf-8", r.contentType, c.name)
	}
	require.Equal(t, http.StatusOK, w.post(t, log.request(t, 20, 40)).status, "the log's own history still extends")

	kept := refused(t, w)
	require.Len(t, kept, len(cases))
	for i, c := range cases {
		assert.Equal(t, "example.com/log", kept[i].Origin, c.name)
		assert.Equal(t, c.status, kept[i].Status, c.name)
		assert.Equal(t, c.body, kept[i].Request, "%s: the bytes received", c.name)
		assert.NotEmpty(t, kept[i].Reason, c.name)
		assert.Equal(t, time.Unix(1_700_000_000, 0).Add(time.Duration(i+1)*time.Second).UTC(), kept[i].Time, c.name)
	}
	list, err := w.Refused(context.Background())
	require.NoError(t, err)
	assert.Equal(t, kept, list, "GET /refused lists what Refused returns")
}

func TestOnlyAPOSTAddsACheckpointAndAnythingElseIs404Or405(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	w := serve(t, log)
	r := do(t, http.MethodGet, w.url+tlogwitness.AddCheckpointPath, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
	r = do(t, http.MethodPost, w.url+witness.RefusedPath, nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.status)
	assert.Equal(t, http.StatusNotFound, do(t, http.MethodGet, w.url+"/", nil).status)
	assert.Equal(t, http.StatusNotFound, do(t, http.MethodPost, w.url+"/add-checkpoint/", log.request(t, 0, 1)).status)

	req, err := http.NewRequest(http.MethodPut, w.url+tlogwitness.AddCheckpointPath, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
	assert.Equal(t, "POST", resp.Header.Get("Allow"))
}

func TestAMalformedOrOversizedRequestIs400Or413AndIsNotKept(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	w := serve(t, log)
	checkpoint := string(log.checkpoint(t, 3))
	for name, body := range map[string]string{
		"no old size line":           "\n" + checkpoint,
		"a leading zero":             "old 00\n\n" + checkpoint,
		"a proof line not base64":    "old 0\nnot-a-hash\n\n" + checkpoint,
		"no empty line":              "old 0\n" + checkpoint,
		"a checkpoint not signed":    "old 0\n\nexample.com/log\n3\nAAAA\n",
		"64 consistency proof lines": "old 0\n" + strings.Repeat("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n", 64) + "\n" + checkpoint,
	} {
		r := w.post(t, []byte(body))
		assert.Equal(t, http.StatusBadRequest, r.status, name)
		assert.Equal(t, 1, strings.Count(string(r.body), "\n"), "%s: one line: %q", name, r.body)
	}
	r := w.post(t, []byte("old 0\n\n"+checkpoint+strings.Repeat("x", 64<<10)))
	assert.Equal(t, http.StatusRequestEntityTooLarge, r.status)
	assert.Empty(t, refused(t, w))
}

func TestAWitnessRefusesToOpenWithoutAKeyOrWithAnOriginTwice(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	db := t.TempDir() + "/witness.db"
	_, err := witness.Open(context.Background(), witness.Config{DB: db, Logs: []evlog.Key{log.signer.Key()}})
	assert.ErrorContains(t, err, "no cosignature key")
	other := newMemLog(t, "example.com/log")
	_, err = witness.Open(context.Background(), witness.Config{DB: db, Signer: newSigner(t, "w.example"), Logs: []evlog.Key{log.signer.Key(), other.signer.Key()}})
	assert.ErrorContains(t, err, `log "example.com/log" is listed twice`)
}

// refused is what GET /refused lists.
func refused(t *testing.T, w *served) []witness.Refusal {
	t.Helper()
	r := do(t, http.MethodGet, w.url+witness.RefusedPath, nil)
	require.Equal(t, http.StatusOK, r.status)
	assert.Equal(t, "application/json", r.contentType)
	var out []witness.Refusal
	require.NoError(t, json.Unmarshal(r.body, &out))
	return out
}
