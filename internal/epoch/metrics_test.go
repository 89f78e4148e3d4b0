package epoch_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTheEpochMetricsAreGaugesOfWhatTheStoreHolds(t *testing.T) {
	f := newFixture(t, 64)
	require.Equal(t, http.StatusAccepted, f.compute(t, "queued", threeAccounts).Code)
	rec := f.do(t, "GET", "/metrics", "")
	require.Equal(t, http.StatusOK, rec.Code)
	body := rec.Body.String()
	assert.Contains(t, body, `keeper_epochs{status="queued"} 1`)
	assert.Contains(t, body, `keeper_epochs{status="completed"} 0`, "every status has a series from the start")
	assert.Contains(t, body, `keeper_queue_depth{queue="epochs"} 1`)
	assert.Contains(t, body, "# TYPE keeper_epochs_quarantined gauge")
	assert.Contains(t, body, "keeper_epochs_quarantined 0")
	assert.NotContains(t, body, "keeper_quarantine_total")
}
