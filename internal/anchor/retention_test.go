package anchor_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/anchor"
	"github.com/keeperhq/keeper/internal/archive"
	"github.com/keeperhq/keeper/internal/httpapi/apitest"
	"github.com/keeperhq/keeper/internal/store"
	"github.com/keeperhq/keeper/merkle"
	"github.com/keeperhq/keeper/receipt"
)

type archivedJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Archive string `json:"archive"`
}

func TestRetentionMovesOldConfirmedEvidenceToTheArchiveAndItsReadsAnswer410NamingTheFile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newFixture(t, 100)
		ctx := context.Background()
		old := f.submit(t, "old", 5)
		b, ok, err := f.st.FormBatch(ctx, "stub", 10)
		require.NoError(t, err)
		require.True(t, ok)
		leaves, err := f.st.BatchLeaves(ctx, b.ID)
		require.NoError(t, err)
		tree, err := merkle.Build(leaves)
		require.NoError(t, err)
		require.NoError(t, f.st.MarkSubmitted(ctx, b.ID, tree.Root(), "0xfeed"))
		require.NoError(t, f.st.ConfirmBatch(ctx, b.ID, store.Confirmation{TxRef: "0xfeed", Block: 3, BlockTime: time.Now(), Network: "stub:local"}))
		rec := f.do(t, "GET", "/v1/evidence/"+old.ID+"/receipt", "")
		require.Equal(t, http.StatusOK, rec.Code)
		served, err := receipt.Parse(rec.Body.Bytes())
		require.NoError(t, err)
		time.Sleep(10 * time.Millisecond)
		young := f.submit(t, "young", 5)

		dir := t.TempDir()
		ar := &anchor.Archiver{Store: f.st, Dir: dir, Retention: 5 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Archived: anchor.NewArchivedCounter()}
		n, err := ar.ArchiveOnce(ctx)
		require.NoError(t, err)
		assert.Equal(t, 1, n, "only the confirmed evidence goes; the young one is pending")

		for _, req := range [][2]string{{"GET", "/v1/evidence/" + old.ID}, {"GET", "/v1/evidence/" + old.ID + "/receipt"}, {"POST", "/v1/evidence/" + old.ID + "/retry"}} {
			rec := f.do(t, req[0], req[1], "")
			require.Equal(t, http.StatusGone, rec.Code, "%s %s: %s", req[0], req[1], rec.Body.String())
			e := apitest.Decode[archivedJSON](t, rec)
			assert.Equal(t, "archived", e.Code)
			require.NotEmpty(t, e.Archive)
			assert.Contains(t, e.Message, e.Archive)

			line, err := archive.Find(dir, e.Archive, old.ID)
			require.NoError(t, err)
			got, err := receipt.Parse(line)
			require.NoError(t, err)
			assert.Equal(t, served, got, "the archive holds the receipt keeper served")
			require.Len(t, got.Anchors, 1)
			assert.NoError(t, got.CheckProof(got.Anchors[0]))
		}
		assert.Equal(t, "pending", f.get(t, young.ID).Status)
		rec = f.do(t, "GET", "/v1/evidence/ev_0123456789abcdef01234567", "")
		assert.Equal(t, http.StatusNotFound, rec.Code, "an id never taken in is still 404")
	})
}
