package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdklog "go.temporal.io/sdk/log"
)

func TestLogsAreJSONUnlessTextIsAsked(t *testing.T) {
	var b bytes.Buffer
	NewLogger(&b, "info", "").Info("batch formed", "batch_id", 7, "chain", "stub")
	var line map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &line), b.String())
	assert.Equal(t, "batch formed", line["msg"])
	assert.Equal(t, 7.0, line["batch_id"])

	b.Reset()
	NewLogger(&b, "info", "text").Info("batch formed", "batch_id", 7)
	assert.True(t, strings.HasPrefix(b.String(), "time="), b.String())
	assert.Contains(t, b.String(), "batch_id=7")
}

func TestLogLevelDropsQuieterLines(t *testing.T) {
	var b bytes.Buffer
	log := NewLogger(&b, "warn", "json")
	log.Info("quiet")
	log.Warn("loud")
	assert.NotContains(t, b.String(), "quiet")
	assert.Contains(t, b.String(), "loud")
}

func TestTemporalSDKLinesUseKeepersWorkflowKeys(t *testing.T) {
	var b bytes.Buffer
	sdk := sdklog.NewStructuredLogger(NewLogger(&b, "info", "json"))
	sdk.Info("Activity error.", "WorkflowID", "anchor-stub-7", "RunID", "r1", "TraceID", "t1")
	var line map[string]any
	require.NoError(t, json.Unmarshal(b.Bytes(), &line), b.String())
	assert.Equal(t, "anchor-stub-7", line["workflow_id"])
	assert.Equal(t, "r1", line["run_id"])
	assert.Equal(t, "t1", line["trace_id"])
	assert.NotContains(t, line, "WorkflowID")
}
