package archive_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/keeperhq/keeper/internal/archive"
)

func TestAReceiptWrittenToTheArchiveIsFoundByItsEvidenceID(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "archive")
	first, err := archive.Write(dir, [][]byte{[]byte(`{"evidence_id":"ev_1","digest":"aa"}`), []byte(`{"evidence_id":"ev_2","digest":"bb"}`)})
	require.NoError(t, err)
	second, err := archive.Write(dir, [][]byte{[]byte(`{"evidence_id":"ev_3","digest":"ev_1"}`)})
	require.NoError(t, err)
	assert.NotEqual(t, first, second)

	got, err := archive.Find(dir, first, "ev_2")
	require.NoError(t, err)
	assert.JSONEq(t, `{"evidence_id":"ev_2","digest":"bb"}`, string(got))
	got, err = archive.Find(dir, "", "ev_1")
	require.NoError(t, err)
	assert.JSONEq(t, `{"evidence_id":"ev_1","digest":"aa"}`, string(got), "a line that merely mentions the id is not its receipt")

	_, err = archive.Find(dir, second, "ev_2")
	assert.ErrorIs(t, err, archive.ErrNotFound)
	_, err = archive.Find(dir, "", "ev_9")
	assert.ErrorIs(t, err, archive.ErrNotFound)
	_, err = archive.Find(dir, "../"+first, "ev_1")
	assert.Error(t, err, "only names inside the archive directory")

	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file is left behind")
}
