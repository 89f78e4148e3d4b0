package testsuite

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.temporal.io/sdk/worker"

	"github.com/keeperhq/keeper/internal/workflows"
)

// TestRecordedHistoriesReplay replays histories recorded from real runs
// (go run ./testsuite/record) against today's workflow code. A change that
// alters the commands a workflow issues fails here: version it with
// workflow.GetVersion, or re-record deliberately.
func TestRecordedHistoriesReplay(t *testing.T) {
	files, err := filepath.Glob("testdata/histories/*.json")
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(files), 41, "the corpus holds a confirmed, a retried, a resubmitted and a dead-lettered batch on each revision of AnchorBatch (and on revision 2 with the evidence log), a completed and a quarantined epoch and one quarantined by its intents, "+
		"the WalletSync and Backfill of a completed, an abandoned and a re-added wallet from before and after WalletSync finished while a network waits, "+
		"and of a retried wallet and a wallet on two networks one of which retried, and webhook deliveries before and after the receiver signals (delivered after retries, failed, and a 410 gone)")
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			r := worker.NewWorkflowReplayer()
			r.RegisterWorkflow(workflows.AnchorBatch)
			r.RegisterWorkflow(workflows.EpochCompute)
			r.RegisterWorkflow(workflows.WalletSync)
			r.RegisterWorkflow(workflows.Backfill)
			r.RegisterWorkflow(workflows.DeliverWebhook)
			require.NoError(t, r.ReplayWorkflowHistoryFromJSONFile(nil, f))
		})
	}
}

// TestWebhookHistoriesCarryIDsOnly checks the recorded DeliverWebhook
// histories: their payloads name the delivery, never its body or a secret.
func TestWebhookHistoriesCarryIDsOnly(t *testing.T) {
	files, err := filepath.Glob("testdata/histories/*_deliver_webhook_*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		var payloads int
		for _, m := range regexp.MustCompile(`"data":\s*"([^"]+)"`).FindAllSubmatch(raw, -1) {
			p, err := base64.StdEncoding.DecodeString(string(m[1]))
			require.NoError(t, err)
			payloads++
			assert.NotContains(t, string(p), "whsec_", f)
			assert.NotContains(t, string(p), `"type":"evidence.confirmed"`, "%s carries a delivery's body", f)
			assert.NotContains(t, string(p), "http://", "%s carries the endpoint", f)
		}
		assert.Positive(t, payloads, f)
		assert.Contains(t, string(raw), "msg_", f)
	}
}
