package worker

import (
	"context"
	"log/slog"

	"go.temporal.io/sdk/activity"
)

// ActivityLogger returns base carrying the running activity's workflow id,
// run id, activity type and attempt, then attrs, so every line an activity
// logs can be found by its workflow. base may be nil (no log); outside an
// activity (a test calling the method itself) only attrs are added.
func ActivityLogger(ctx context.Context, base *slog.Logger, attrs ...any) *slog.Logger {
	if base == nil {
		return slog.New(slog.DiscardHandler)
	}
	if activity.IsActivity(ctx) {
		info := activity.GetInfo(ctx)
		base = base.With("workflow_id", info.WorkflowExecution.ID, "run_id", info.WorkflowExecution.RunID,
			"activity", info.ActivityType.Name, "attempt", info.Attempt)
	}
	return base.With(attrs...)
}
