package witness_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheStateAndTheRefusedRequestsSurviveCloseAndOpen(t *testing.T) {
	log := newMemLog(t, "example.com/log")
	w := serve(t, log)
	require.Equal(t, http.StatusOK, w.post(t, log.request(t, 0, 10)).status)
	fork := log.forkAt(t, 9, "fork ")
	require.Equal(t, http.StatusUnprocessableEntity, w.post(t, fork.request(t, 10, 10)).status)
	w.stop()

	other := newMemLog(t, "example.com/other") // a log added at the restart
	w.open(t, log, other)
	r := w.post(t, log.request(t, 0, 20))
	assert.Equal(t, http.StatusConflict, r.status)
	assert.Equal(t, "10\n", string(r.body), "the size cosigned before the restart")
	assert.Equal(t, http.StatusUnprocessableEntity, w.post(t, fork.request(t, 10, 10)).status, "the fork is still refused")
	assert.Equal(t, http.StatusOK, w.post(t, log.request(t, 10, 20)).status)
	assert.Equal(t, http.StatusOK, w.post(t, other.request(t, 0, 3)).status, "a new log starts at size 0")

	kept := refused(t, w)
	require.Len(t, kept, 2)
	assert.Equal(t, kept[0].Request, kept[1].Request, "the refused request from before the restart is kept")
}
